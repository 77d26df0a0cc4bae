//! Recomputes every checksum of an archive the way the `archive_fixcrc` target does before it
//! exercises an input, so that a finding of that target can be replayed with the command line:
//!
//! ```sh
//! cd fuzz && cargo run --example fixcrc -- artifacts/archive_fixcrc/crash-... /tmp/fixed.nc3z
//! nc3pack verify /tmp/fixed.nc3z; nc3pack reindex -f /tmp/fixed.nc3z /tmp/re.nc3z
//! ```

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        eprintln!("usage: fixcrc INPUT OUTPUT");
        std::process::exit(2);
    };
    let mut bytes = match std::fs::read(input) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("fixcrc: {input}: {e}");
            std::process::exit(1);
        }
    };
    nc3pack_fuzz::fix_crcs(&mut bytes);
    if let Err(e) = std::fs::write(output, bytes) {
        eprintln!("fixcrc: {output}: {e}");
        std::process::exit(1);
    }
}
