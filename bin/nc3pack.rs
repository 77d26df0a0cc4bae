//! The nc3pack command line: parses arguments (`cli`), calls the library (`commands`: one
//! function per command) and prints what it returns (`text`).

mod cli;
mod commands;
mod text;

/// glibc's allocator, left to itself, returns the memory of each block's buffers (several MiB
/// of pco's work space per block) to the system and takes it back, zeroed, for the next block:
/// page faults and page clearing were 10-15 % of packing mesh.nc's CPU. Keeping allocations up
/// to 32 MiB on the heap and trimming it only above 64 MiB free avoids that, for a few MiB more
/// peak memory.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

fn main() {
    tune_allocator();
    // Ctrl-C, SIGTERM, SIGHUP and an allocation failure remove the temporary outputs.
    if let Err(e) = nc3pack::cleanup::install_signal_handlers() {
        eprintln!("nc3pack: cannot install signal handlers: {e}");
        std::process::exit(1);
    }
    let cli = match cli::parse(std::env::args_os().collect()) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    if let Err(e) = commands::run(cli) {
        // nc3pack's errors already say their cause; for others add causes that say something new.
        let (msg, code) = match e.downcast_ref::<nc3pack::Error>() {
            Some(ne @ nc3pack::Error::Option(_)) => (ne.to_string(), 2),
            Some(ne) => (ne.to_string(), 1),
            None => {
                let mut msg = e.to_string();
                for cause in e.chain().skip(1) {
                    let c = cause.to_string();
                    if !msg.contains(&c) {
                        msg = format!("{msg}: {c}");
                    }
                }
                (msg, 1)
            }
        };
        // Any URL in it (a cause's text may quote one) without its password or query string.
        eprintln!("nc3pack: {}", nc3pack::error::redact_url(&msg));
        std::process::exit(code);
    }
}
