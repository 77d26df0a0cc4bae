//! Helpers shared by the integration tests: where the samples are, temporary directories, and a
//! runner for the command line whose failures show the command, its exit code and its output
//! (and a line diff for text that differs).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The command line under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_nc3pack");

/// The repository's root directory (these tests belong to the command line's package, bin/).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bin/ is in the repository's root")
        .to_path_buf()
}

/// `samples/`.
pub fn samples_dir() -> PathBuf {
    root().join("samples")
}

/// `samples/NAME`.
pub fn sample(name: &str) -> PathBuf {
    samples_dir().join(name)
}

/// A new temporary directory, removed with what it holds when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("cannot create a temporary directory")
}

/// Skips the running test, which cannot run on this machine for `reason` (a tool or server that
/// is not installed, with the command that installs it); the caller then returns. Under CI (env
/// `CI` set) a skip is a failure: this panics. Otherwise it prints `nc3pack-skip: TEST: REASON`
/// on stderr and appends that line to the file env `NC3PACK_SKIP_LOG` names: scripts/test.sh
/// counts and names the skipped tests in its summary (cargo test shows a passing test's stderr
/// only with `--nocapture`). TEST is the test's thread's name, as cargo test prints it.
pub fn skip(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("(a test's helper thread)")
        .to_owned();
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} cannot run: {reason} (CI is set: a skipped test is a failure)"
    );
    let line = format!("nc3pack-skip: {test}: {reason}\n");
    eprint!("{line}");
    if let Some(log) = std::env::var_os("NC3PACK_SKIP_LOG") {
        use std::io::Write;
        // One write of one line, in append mode: lines of tests running at once do not mix.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .unwrap_or_else(|e| panic!("cannot append to NC3PACK_SKIP_LOG {log:?}: {e}"));
    }
}

/// Whether the program `tool` runs here; when it does not, the test is skipped ([`skip`]) naming
/// `install`, the command that installs it.
pub fn have_tool(tool: &str, install: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        skip(&format!("needs {tool} ({install})"));
    }
    found
}

/// `nc3pack ARGS...`, to be run with [`Run::output`] or checked with [`Run::expect`].
pub fn nc3pack<S: AsRef<OsStr>>(args: &[S]) -> Run {
    Run {
        args: args.iter().map(|a| a.as_ref().to_os_string()).collect(),
        stdin: Input::Null,
        env: Vec::new(),
    }
}

/// What a run reads on standard input.
enum Input {
    Null,
    Bytes(Vec<u8>),
    File(PathBuf),
}

/// A run of the command line being set up.
pub struct Run {
    args: Vec<OsString>,
    stdin: Input,
    env: Vec<(String, String)>,
}

/// What a run of the command line gave.
#[derive(Debug)]
pub struct Output {
    /// The command, for messages.
    pub command: String,
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Feeds `bytes` on standard input (the command may stop reading early: that is not a
    /// failure).
    pub fn stdin(mut self, bytes: &[u8]) -> Run {
        self.stdin = Input::Bytes(bytes.to_vec());
        self
    }

    /// Feeds the file `path` on standard input.
    pub fn stdin_file(mut self, path: &Path) -> Run {
        self.stdin = Input::File(path.to_path_buf());
        self
    }

    /// Sets an environment variable for the run.
    pub fn env(mut self, key: &str, value: &str) -> Run {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the command to its end.
    pub fn output(self) -> Output {
        let command = std::iter::once("nc3pack".to_string())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ");
        let mut c = Command::new(BIN);
        c.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.stdin(match &self.stdin {
            Input::Null => Stdio::null(),
            Input::Bytes(_) => Stdio::piped(),
            Input::File(p) => Stdio::from(std::fs::File::open(p).expect("open the stdin file")),
        });
        let mut child = c.spawn().expect("cannot start nc3pack");
        if let (Input::Bytes(bytes), Some(mut w)) = (&self.stdin, child.stdin.take()) {
            let _ = std::io::Write::write_all(&mut w, bytes);
        }
        let out = child.wait_with_output().expect("wait for nc3pack");
        Output {
            command,
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs the command and checks that it exits with `code`; on any other outcome, panics
    /// showing the command, its exit code and its output.
    #[track_caller]
    pub fn expect(self, code: i32) -> Output {
        let out = self.output();
        if out.code != Some(code) {
            panic!("expected exit code {code}:\n{out}");
        }
        out
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self
            .code
            .map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
        writeln!(f, "$ {}\n{code}", self.command)?;
        writeln!(f, "--- stdout ---\n{}", self.stdout)?;
        write!(f, "--- stderr ---\n{}", self.stderr)
    }
}

/// Asserts that the text `actual` is `expected`; otherwise panics with `what` and a line diff
/// (`-` expected, `+` actual, common lines shown around each difference).
#[track_caller]
pub fn assert_text_eq(what: &str, expected: &str, actual: &str) {
    if expected != actual {
        panic!(
            "{what} differs (- expected, + actual):\n{}",
            line_diff(expected, actual)
        );
    }
}

/// A line diff of `a` and `b` by their longest common subsequence, with two lines of context
/// around each change (long inputs are cut short: the first 2000 lines of each).
pub fn line_diff(a: &str, b: &str) -> String {
    const MAX_LINES: usize = 2000;
    const CONTEXT: usize = 2;
    let a: Vec<&str> = a.lines().take(MAX_LINES).collect();
    let b: Vec<&str> = b.lines().take(MAX_LINES).collect();
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| {
        ops[k.saturating_sub(CONTEXT)..(k + CONTEXT + 1).min(ops.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, line)) in ops.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out += "   ...\n";
                skipped = false;
            }
            out += &format!(" {c} {line}\n");
        } else {
            skipped = true;
        }
    }
    if skipped {
        out += "   ...\n";
    }
    out
}

#[test]
fn line_diff_marks_changed_lines_with_context() {
    let a = "1\n2\n3\n4\n5\n6\n7\n8\n";
    let b = "1\n2\n3\n4\nfive\n6\n7\n8\n";
    assert_eq!(
        line_diff(a, b),
        "   ...\n   3\n   4\n - 5\n + five\n   6\n   7\n   ...\n"
    );
    assert_eq!(line_diff("x\n", "x\ny\n"), "   x\n + y\n");
    assert_eq!(line_diff("", ""), "");
}

/// The fields of a quantized file's `packed` manifest line that a rerun writes again when the
/// line was lost: the input's size and hash, the restored (quantized) file's, the archive's
/// length.
pub const LOSSY_LINE_KEYS: [&str; 5] = [
    "size",
    "xxh3",
    "restored_size",
    "restored_xxh3",
    "output_size",
];

/// The (status, name) of each line of a manifest's text.
pub fn manifest_statuses(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["status"].as_str().unwrap().to_string(),
                v["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `len` bytes of xorshift64 noise from `seed` (non-zero): incompressible, reproducible.
pub fn noise_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    let mut x = seed;
    for c in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
    }
    data
}

/// Hyperslab `start`/`count` of a row-major array of `shape` (the obvious way).
pub fn cut<T: Copy>(all: &[T], shape: &[usize], start: &[usize], count: &[usize]) -> Vec<T> {
    let mut out = Vec::new();
    let n: usize = count.iter().product();
    for k in 0..n {
        let mut rest = k;
        let mut at = 0;
        for d in (0..shape.len()).rev() {
            let i = start[d] + rest % count[d];
            rest /= count[d];
            let stride: usize = shape[d + 1..].iter().product();
            at += i * stride;
        }
        out.push(all[at]);
    }
    out
}

/// Pack options of the `max` preset (or the default one), with `block_size` if given, on
/// `threads` threads.
pub fn preset_options(max: bool, block_size: Option<u32>, threads: usize) -> nc3pack::PackOptions {
    let opts = if max {
        nc3pack::PackOptions::max()
    } else {
        nc3pack::PackOptions::default()
    };
    match block_size {
        Some(b) => opts.with_block_size(b),
        None => opts,
    }
    .with_threads(threads)
}

/// `ncgen -k KIND -o OUT CDL` with OUT limited to `max_bytes` (RLIMIT_FSIZE: some of netCDF-C's
/// test CDL files make files of gigabytes); false when ncgen cannot make that kind or the file
/// would be longer (nothing longer is left on disk).
pub fn ncgen_at_most(cdl: &Path, kind: &str, out: &Path, max_bytes: u64) -> bool {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("ncgen");
    cmd.args(["-k", kind, "-o"])
        .arg(out)
        .arg(cdl)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Safety: setrlimit is async-signal-safe; it only lowers this child's file size limit.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: max_bytes + 1,
                rlim_max: max_bytes + 1,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let made = cmd.status().is_ok_and(|s| s.success());
    let fits = std::fs::metadata(out).is_ok_and(|m| m.len() <= max_bytes);
    if !(made && fits) {
        let _ = std::fs::remove_file(out);
        return false;
    }
    true
}

/// Deterministic pseudo-random numbers (splitmix64), for tests that need many cheap draws.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Damages the archive `z`: 8 bytes in the middle of the payload of the first block of
/// variable `var`, from block `from(number of its blocks)` on, that has a payload (not a
/// constant block).
pub fn damage_a_block(z: &Path, var: &str, from: impl FnOnce(u64) -> u64) {
    let a = nc3pack::Archive::open(z).unwrap();
    let s = a.header().var_id(var).unwrap();
    let n = a.block_count(s);
    let e = (from(n)..n)
        .map(|b| *a.entry(s, b))
        .find(|e| e.stored_len > 256)
        .unwrap();
    drop(a);
    let mut bytes = std::fs::read(z).unwrap();
    let mid = (e.offset + u64::from(e.stored_len) / 2 + 16) as usize;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(z, &bytes).unwrap();
}
