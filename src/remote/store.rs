//! Building the `object_store` store (and the object's path) for a URL and [`RemoteOptions`].

use super::classify::one_line;
use super::options::RemoteOptions;
use super::runtime::install_crypto;
use crate::error::RemoteError;
use object_store::path::Path as StorePath;
use object_store::ObjectStore;
use std::sync::Arc;
use std::time::Duration;

/// Retries with exponential backoff (0.1 s doubling up to 5 s), as many and as long as `opts`
/// allow.
fn retry_config(opts: &RemoteOptions) -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: opts.max_retries,
        retry_timeout: opts.retry_timeout,
    }
}

/// Builds the store and the object's path for an `s3://` or `http(s)://` URL.
pub(super) fn store_for(
    url: &str,
    opts: &RemoteOptions,
) -> std::result::Result<(Arc<dyn ObjectStore>, StorePath), RemoteError> {
    use object_store::ClientOptions;
    install_crypto();
    let invalid = |why: &str| RemoteError::InvalidUrl { why: why.into() };
    let retry = retry_config(opts);
    // A timeout is waiting this long for an answer, or then for its body's next bytes (not
    // the time of the whole request: a large object streams for as long as it takes).
    let client = ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(10))
        .with_read_timeout(opts.timeout)
        .with_timeout_disabled();
    let lower = url.to_ascii_lowercase();
    if url.contains('?') || url.contains('#') {
        return Err(invalid(
            "query strings and fragments are not supported (give the object's plain URL)",
        ));
    }
    if lower.starts_with("s3://") {
        let rest = &url[5..];
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() || key.is_empty() || key.ends_with('/') {
            return Err(invalid("an S3 URL is s3://BUCKET/KEY"));
        }
        let location =
            StorePath::parse(key).map_err(|e| invalid(&format!("bad object key: {e}")))?;
        Ok((s3_store(bucket, opts)?, location))
    } else if lower.starts_with("http://") || lower.starts_with("https://") {
        let scheme_end = url.find("://").unwrap_or(0) + 3;
        let path_at = url[scheme_end..]
            .find('/')
            .map(|i| scheme_end + i)
            .ok_or_else(|| invalid("the URL names no object"))?;
        let (base, path) = (&url[..path_at], &url[path_at + 1..]);
        if path.is_empty() || path.ends_with('/') {
            return Err(invalid("the URL names no object"));
        }
        let location = StorePath::from_url_path(path)
            .map_err(|e| invalid(&format!("bad object path: {e}")))?;
        let store = object_store::http::HttpBuilder::new()
            .with_url(base)
            .with_retry(retry)
            .with_client_options(client.with_allow_http(lower.starts_with("http://")))
            .build()
            .map_err(|e| RemoteError::Config {
                why: one_line(&e.to_string()),
            })?;
        Ok((Arc::new(store), location))
    } else {
        Err(invalid(
            "unknown scheme (use s3://, http://, https:// or file://)",
        ))
    }
}

/// The store of S3 bucket `bucket`, with the options' credentials, endpoint and retries.
pub(super) fn s3_store(
    bucket: &str,
    opts: &RemoteOptions,
) -> std::result::Result<Arc<dyn ObjectStore>, RemoteError> {
    install_crypto();
    let retry = retry_config(opts);
    let mut b = if opts.from_env {
        object_store::aws::AmazonS3Builder::from_env()
    } else {
        object_store::aws::AmazonS3Builder::new()
    };
    let env = |k: &str| opts.from_env && std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if opts.anon {
        b = b.with_skip_signature(true);
    } else {
        let has_key = opts.access_key_id.is_some() || env("AWS_ACCESS_KEY_ID");
        let has_secret = opts.secret_access_key.is_some() || env("AWS_SECRET_ACCESS_KEY");
        let other_source = env("AWS_WEB_IDENTITY_TOKEN_FILE")
            || env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
            || env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
        if !(has_key && has_secret || other_source && !has_key && !has_secret) {
            return Err(RemoteError::NoCredentials);
        }
    }
    if let Some(v) = &opts.access_key_id {
        b = b.with_access_key_id(v);
    }
    if let Some(v) = &opts.secret_access_key {
        b = b.with_secret_access_key(v);
    }
    if let Some(v) = &opts.session_token {
        b = b.with_token(v);
    }
    if let Some(v) = &opts.endpoint {
        b = b.with_endpoint(v);
    }
    if let Some(v) = &opts.region {
        b = b.with_region(v);
    }
    if let Some(v) = opts.allow_http {
        b = b.with_allow_http(v);
    }
    // Timeouts set one by one: client options as a whole would drop the environment's
    // (AWS_ALLOW_HTTP).
    use object_store::aws::AmazonS3ConfigKey as K;
    use object_store::ClientConfigKey as C;
    let store = b
        .with_bucket_name(bucket)
        .with_retry(retry)
        .with_config(K::Client(C::ConnectTimeout), "10s")
        .with_config(
            K::Client(C::ReadTimeout),
            format!("{}ms", opts.timeout.as_millis()),
        )
        // No bound on a whole request (the read timeout finds a stalled one): a day.
        .with_config(K::Client(C::Timeout), "86400s")
        .build()
        .map_err(|e| RemoteError::Config {
            why: one_line(&e.to_string()),
        })?;
    Ok(Arc::new(store))
}
