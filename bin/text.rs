//! The lines the command line prints of a result: sizes
//! ([`human`]), a packed file's summary ([`pack_summary`]), a verify report ([`verify`]), a
//! collection's summary ([`collection`]), its verification ([`verify_collection`]) and what its
//! manifests record ([`collection_summary`]).

use nc3pack::collection::{CollectionReport, CollectionSummary, VerifyCollectionReport};
use nc3pack::quantize::{Algorithm, LossyComparison};
use nc3pack::{PackSummary, VerifyReport};
use std::fmt::Write;
use std::path::Path;

/// A byte count in B, KiB, MiB, GiB or TiB (one decimal above bytes).
pub fn human(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", units[u])
    }
}

/// A path or URL as printed: a URL's password and query string hidden
/// ([`nc3pack::error::redact_url`]).
pub fn shown(p: &Path) -> String {
    nc3pack::error::redact_url(&p.to_string_lossy()).into_owned()
}

/// A packed file's summary: sizes, ratio and blocks, then `extra`.
pub fn pack_summary(s: &PackSummary, extra: &str) -> String {
    format!(
        "{} -> {} (ratio {:.2}), {} block{}{extra}",
        human(s.input_len),
        human(s.output_len),
        s.input_len as f64 / s.output_len.max(1) as f64,
        s.blocks,
        if s.blocks == 1 { "" } else { "s" },
    )
}

/// The lines of `nc3pack verify ARCHIVE [--against ORIGINAL]`: the damage, the verdict on the
/// original (`against`), or the quantization of a lossy archive (`lossy`, read from its
/// header), and the `ok` line when intact.
pub fn verify(
    archive: &Path,
    against: Option<&Path>,
    r: &VerifyReport,
    lossy: Option<&nc3pack::quantize::Lossy>,
) -> String {
    let z = shown(archive);
    let mut text = String::new();
    for d in &r.damage {
        let _ = writeln!(text, "{z}: damaged: {d}");
    }
    if let (Some(orig), Some(c)) = (against, &r.lossy) {
        lossy_verdict(&mut text, &z, &shown(orig), c);
    } else if let (Some(orig), Some(m)) = (against, r.original_matches) {
        let verdict = if m { "matches" } else { "does NOT match" };
        let _ = writeln!(text, "{z}: {verdict} {}", shown(orig));
    } else if let Some(l) = lossy {
        let _ = writeln!(text, "{z}: lossy archive: {l}");
    }
    if r.damage.is_empty() {
        let _ = writeln!(
            text,
            "{z}: ok: {} blocks, every checksum matches, restored data matches the original's hash",
            r.blocks
        );
    }
    text
}

/// The lines `verify --against` prints for a lossy archive: the largest error per quantized
/// variable, and whether the rest equals the original.
fn lossy_verdict(text: &mut String, z: &str, o: &str, c: &LossyComparison) {
    let recorded = if c.original_recorded {
        "is the original recorded in the archive"
    } else {
        "is NOT the original recorded in the archive"
    };
    let _ = writeln!(text, "{z}: lossy archive; {o} {recorded}");
    for v in &c.vars {
        let verdict = if v.within_bound {
            "within the bound".to_string()
        } else if v.kept_changed > 0 {
            format!("{} fill/NaN/infinite values changed", v.kept_changed)
        } else {
            "OUTSIDE the bound".to_string()
        };
        let subnormal = match (v.subnormal, v.quantization.algorithm) {
            (0, _) => String::new(),
            (n, Algorithm::BitRound) => {
                format!("; {n} subnormal values, held to the bound of the least normal value")
            }
            (n, Algorithm::GranularBitRound) => format!(
                "; {n} subnormal values, not held to a bound: Granular BitRound keeps fewer \
                 digits of them"
            ),
            (n, _) => format!("; {n} subnormal values"),
        };
        let moved: String = v
            .moved_outside_valid
            .iter()
            .map(|m| format!("; {}", m.outside()))
            .collect();
        let _ = writeln!(
            text,
            "{z}: {} ({}): largest error {:e} (relative {:e}{subnormal}), {verdict}{moved}",
            v.name, v.quantization, v.max_abs, v.max_rel
        );
    }
    if c.others_equal {
        let _ = writeln!(text, "{z}: every other variable equals {o}'s");
    } else {
        let _ = writeln!(
            text,
            "{z}: variables that differ from {o}'s though not quantized: {}",
            c.differing.join(", ")
        );
    }
}

/// The summary line of `nc3pack pack ... -o OUT` (without its newline): files packed, skipped,
/// sizes and ratio, and `seconds`.
pub fn collection(r: &CollectionReport, seconds: f64) -> String {
    let note = if r.skipped > 0 {
        format!(", {} already packed (skipped)", r.skipped)
    } else {
        String::new()
    };
    let sizes = match r.ratio() {
        Some(ratio) => format!(
            ": {} -> {} (ratio {ratio:.2})",
            human(r.input_bytes),
            human(r.output_bytes),
        ),
        None => String::new(),
    };
    format!(
        "packed {} of {} files{note} into {}{sizes}, {seconds:.2} s",
        r.packed,
        r.files,
        r.output.display(),
    )
}

/// The lines of `nc3pack verify --manifest M...`: the unreadable lines, the failures, and a
/// summary (`against`: whether the originals were compared).
pub fn verify_collection(r: &VerifyCollectionReport, against: bool) -> String {
    let mut text = String::new();
    for (m, n) in &r.bad_lines {
        let _ = writeln!(text, "{}: line {n}: not a manifest entry", m.display());
    }
    for (p, what) in &r.failures {
        let _ = writeln!(text, "{}: {what}", p.display());
    }
    let _ = writeln!(
        text,
        "verified {} archives{}: {} failed{}",
        r.checked,
        if against {
            " against the originals"
        } else {
            ""
        },
        r.failures.len(),
        if r.bad_lines.is_empty() {
            String::new()
        } else {
            format!(", {} manifest lines unreadable", r.bad_lines.len())
        }
    );
    text
}

/// The lines of `nc3pack info --manifest M...`: what the manifests record of a collection
/// (files, archives, bytes in and out, the ratio), then the unreadable lines and the failures.
pub fn collection_summary(s: &CollectionSummary) -> String {
    let mut text = format!(
        "{} manifests, {} lines: {} files, {} packed, {} failed\n",
        s.manifests,
        s.lines,
        s.files,
        s.packed,
        s.failures.len()
    );
    if let Some(ratio) = s.ratio() {
        let _ = writeln!(
            text,
            "packed: {} -> {} (ratio {ratio:.2}), {:.1} s of packing (summed over files)",
            human(s.input_bytes),
            human(s.output_bytes),
            s.seconds,
        );
    }
    if s.unknown_size > 0 {
        let _ = writeln!(
            text,
            "{} archives without a recorded size (their `packed` lines are in manifests not given)",
            s.unknown_size
        );
    }
    if s.lossy > 0 {
        let _ = writeln!(text, "{} archives of quantized (lossy) files", s.lossy);
    }
    if s.deleted > 0 {
        let _ = writeln!(
            text,
            "{} originals deleted after their archives were proven",
            s.deleted
        );
    }
    for (m, n) in &s.bad_lines {
        let _ = writeln!(text, "{}: line {n}: not a manifest entry", m.display());
    }
    for (input, error) in &s.failures {
        // The recorded error names its file, as a rule.
        match error.starts_with(&*input.to_string_lossy()) {
            true => writeln!(text, "failed: {error}"),
            false => writeln!(text, "failed: {}: {error}", input.display()),
        }
        .unwrap_or_default();
    }
    text
}

/// [`collection_summary`] as one JSON object and a newline (`nc3pack info --manifest M...
/// --json`): the fields of [`CollectionSummary`], `ratio` (null when nothing is recorded),
/// `failures` as `{"input", "error"}` objects and `bad_lines` as `{"manifest", "line"}`.
pub fn collection_summary_json(s: &CollectionSummary) -> String {
    let lossy = |p: &Path| p.to_string_lossy().into_owned();
    let v = serde_json::json!({
        "manifests": s.manifests,
        "lines": s.lines,
        "files": s.files,
        "packed": s.packed,
        "failed": s.failures.len(),
        "input_bytes": s.input_bytes,
        "output_bytes": s.output_bytes,
        "ratio": s.ratio(),
        "unknown_size": s.unknown_size,
        "lossy": s.lossy,
        "deleted": s.deleted,
        "seconds": (s.seconds * 1000.0).round() / 1000.0,
        "failures": s.failures.iter().map(|(i, e)| serde_json::json!({"input": lossy(i), "error": e})).collect::<Vec<_>>(),
        "bad_lines": s.bad_lines.iter().map(|(m, n)| serde_json::json!({"manifest": lossy(m), "line": n})).collect::<Vec<_>>(),
    });
    format!("{v}\n")
}

#[cfg(test)]
mod examples {
    //! The lines printed for simple results.

    #[test]
    fn human_in_kib() {
        assert_eq!(crate::text::human(1536), "1.5 KiB");
    }

    #[test]
    fn human_units() {
        assert_eq!(crate::text::human(100), "100 B");
        assert_eq!(crate::text::human(3 << 20), "3.0 MiB");
    }

    #[test]
    fn shown_plain_path() {
        assert_eq!(crate::text::shown("a/b.nc".as_ref()), "a/b.nc");
    }

    #[test]
    fn collection_empty() {
        let r = nc3pack::collection::CollectionReport::default();
        assert_eq!(
            crate::text::collection(&r, 1.0),
            "packed 0 of 0 files into , 1.00 s"
        );
    }

    #[test]
    fn verify_collection_empty() {
        let r = nc3pack::collection::VerifyCollectionReport::default();
        assert_eq!(
            crate::text::verify_collection(&r, false),
            "verified 0 archives: 0 failed\n"
        );
    }

    #[test]
    fn collection_summary_empty() {
        let s = nc3pack::collection::CollectionSummary::default();
        assert_eq!(
            crate::text::collection_summary(&s),
            "0 manifests, 0 lines: 0 files, 0 packed, 0 failed\n"
        );
    }

    #[test]
    fn collection_summary_json_empty() -> Result<(), serde_json::Error> {
        let s = nc3pack::collection::CollectionSummary::default();
        let v: serde_json::Value = serde_json::from_str(&crate::text::collection_summary_json(&s))?;
        assert_eq!(v["files"], 0);
        assert!(v["ratio"].is_null());
        Ok::<(), serde_json::Error>(())
    }
}
