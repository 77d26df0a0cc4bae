//! Classifying `object_store`'s errors as [`RemoteError`]s: one line each, with the status,
//! the S3 error code, and the tries a request took.

use crate::error::RemoteError;

/// An error message on one line, bounded in length.
pub(super) fn one_line(s: &str) -> String {
    let mut t: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.len() > 400 {
        let mut cut = 400;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        t.truncate(cut);
        t.push_str("...");
    }
    t
}

/// The S3 error code in a response body (`<Code>AccessDenied</Code>`), if any.
fn s3_code(s: &str) -> Option<&str> {
    let at = s.find("<Code>")? + 6;
    let end = s[at..].find("</Code>")?;
    Some(&s[at..at + end])
}

/// Classifies an `object_store` error.
pub(super) fn classify(e: &object_store::Error) -> RemoteError {
    use object_store::Error as E;
    let text = e.to_string();
    let mut chain = text.clone();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        chain.push_str(&s.to_string());
        src = s.source();
    }
    let code = s3_code(&chain).map(str::to_string);
    match e {
        // Found wrong by nc3pack itself (an answer's body, say).
        E::Generic { source, .. } if source.is::<RemoteError>() => source
            .downcast_ref::<RemoteError>()
            .cloned()
            .unwrap_or(RemoteError::Request {
                why: one_line(&text),
            }),
        // A 404 for a missing bucket says so in its body.
        _ if code.as_deref() == Some("NoSuchBucket") => RemoteError::NoSuchBucket,
        E::NotFound { .. } => RemoteError::NotFound,
        // 412: the `If-Match` sent (the ETag at open) no longer matches.
        E::Precondition { .. } => RemoteError::Changed {
            what: "the server says its ETag no longer matches the one when opened".into(),
        },
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => RemoteError::AccessDenied {
            code: code.unwrap_or_else(|| "AccessDenied".into()),
        },
        E::NotSupported { .. } => RemoteError::NoRanges,
        _ if matches!(
            code.as_deref(),
            Some("AccessDenied" | "SignatureDoesNotMatch" | "InvalidAccessKeyId")
        ) =>
        {
            RemoteError::AccessDenied {
                code: code.unwrap_or_default(),
            }
        }
        _ => request_failure(&text, code, chain.contains("timed out")),
    }
}

/// A request that failed after its retries, from `object_store`'s message (`... Error
/// performing GET URL in 1.2s, after 5 retries, max_retries: 5, retry_timeout: 60s - Server
/// returned non-2xx status code: 503 Service Unavailable: BODY`): the status, or a timeout, or
/// the cause; with the number of tries and the time they took (the URL is named by the
/// caller).
fn request_failure(text: &str, code: Option<String>, timed_out: bool) -> RemoteError {
    let Some(at) = text.find("Error performing ") else {
        // A failure while an answer's body arrived.
        let why = if timed_out {
            "timed out while the answer arrived".to_string()
        } else {
            one_line(text)
        };
        return RemoteError::Request { why };
    };
    let text = &text[at..];
    let retries = text.find(", after ").and_then(|i| {
        let mut words = text[i + 8..].split(' ');
        let n = words.next()?.parse::<usize>().ok()?;
        (words.next() == Some("retries,")).then_some(n)
    });
    let tries = retries.unwrap_or(0).saturating_add(1);
    let millis = text
        .find(" in ")
        .and_then(|i| text[i + 4..].split([',', ' ']).next())
        .and_then(debug_millis)
        .unwrap_or(0);
    let cause = text.split_once(" - ").map_or(text, |(_, c)| c);
    if let Some(i) = cause.find("status code: ") {
        let rest = &cause[i + 13..];
        let status = rest.split(':').next().unwrap_or(rest).trim();
        return RemoteError::Server {
            status: one_line(status),
            code,
            tries,
            millis,
        };
    }
    if timed_out {
        return RemoteError::TimedOut { tries, millis };
    }
    let cause = cause.strip_prefix("HTTP error: ").unwrap_or(cause);
    let word = if tries == 1 { "try" } else { "tries" };
    RemoteError::Request {
        why: format!(
            "{}, after {tries} {word} in {:.1} s",
            one_line(cause),
            millis as f64 / 1000.0
        ),
    }
}

/// Milliseconds of a duration as `Duration`'s `Debug` writes it (`1.416s`, `659.2ms`,
/// `12µs`), rounded down.
fn debug_millis(s: &str) -> Option<u64> {
    let (number, per_ms) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("µs") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-6)
    } else {
        (s.strip_suffix('s')?, 1e3)
    };
    let v = number.parse::<f64>().ok()? * per_ms;
    (v.is_finite() && v >= 0.0).then_some(v as u64)
}

/// Whether the server answered 416 (Range Not Satisfiable: the object is empty), by the
/// status in the error (not any "416" in its text: a duration or a port may hold those digits)
/// or S3's `InvalidRange` code.
pub(super) fn is_range_not_satisfiable(e: &object_store::Error) -> bool {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        s.push_str(&x.to_string());
        src = x.source();
    }
    s.contains("status code: 416") || s3_code(&s) == Some("InvalidRange")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "HTTP",
            source: text.into(),
        }
    }

    #[test]
    fn a_request_that_failed_after_its_retries_says_the_status_and_the_tries() {
        let e = generic(
            "Error performing GET http://127.0.0.1:4161/x in 1.416s, after 5 retries, \
             max_retries: 5, retry_timeout: 60s  - Server returned non-2xx status code: \
             503 Service Unavailable: <Error><Code>SlowDown</Code></Error>",
        );
        assert_eq!(
            classify(&e).to_string(),
            "server error 503 Service Unavailable (SlowDown), after 6 tries in 1.4 s"
        );
        let e = generic(
            "Error performing GET http://h/x in 3ms - Server returned non-2xx status code: \
             500 Internal Server Error: ",
        );
        assert_eq!(
            classify(&e).to_string(),
            "server error 500 Internal Server Error, after 1 try in 0.0 s"
        );
        let e = generic(
            "Error performing GET http://h/x in 659ms, after 5 retries, max_retries: 5, \
             retry_timeout: 60s - HTTP error: error sending request",
        );
        assert_eq!(
            classify(&e).to_string(),
            "request failed: error sending request, after 6 tries in 0.7 s"
        );
        // Anything else as it was said, on one line.
        assert_eq!(
            classify(&generic("bad\n  thing")).to_string(),
            "request failed: Generic HTTP error: bad thing"
        );
    }

    #[test]
    fn a_timeout_says_the_tries_and_the_time_and_a_missing_bucket_is_not_a_missing_object() {
        let e = generic(
            "Error performing GET http://h/x in 120.004s - HTTP error: error sending request: \
             operation timed out",
        );
        assert_eq!(
            classify(&e).to_string(),
            "request failed: timed out, after 1 try in 120.0 s"
        );
        let e = object_store::Error::NotFound {
            path: "k".into(),
            source: "Server returned non-2xx status code: 404 Not Found: \
                     <Error><Code>NoSuchBucket</Code></Error>"
                .into(),
        };
        assert_eq!(classify(&e), RemoteError::NoSuchBucket);
        assert_eq!(debug_millis("659.2ms"), Some(659));
        assert_eq!(debug_millis("1.416s"), Some(1416));
        assert_eq!(debug_millis("12µs"), Some(0));
        assert_eq!(debug_millis("soon"), None);
    }

    #[test]
    fn only_a_416_answer_is_range_not_satisfiable() {
        // A 503 whose message happens to hold the digits 416 (a duration, a port) is not.
        let e = generic(
            "Error performing GET http://127.0.0.1:4161/x in 1.416s, after 5 retries - \
             Server returned non-2xx status code: 503 Service Unavailable: ",
        );
        assert!(!is_range_not_satisfiable(&e));
        let e = generic(
            "Error performing GET http://h/x in 3ms - Server returned non-2xx status code: \
             416 Range Not Satisfiable: ",
        );
        assert!(is_range_not_satisfiable(&e));
        let e = generic(
            "Error performing GET http://h/x in 3ms - Server returned error response: \
             <Error><Code>InvalidRange</Code><Message>no</Message></Error>",
        );
        assert!(is_range_not_satisfiable(&e));
    }
}
