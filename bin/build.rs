//! Links the `nc3pack` command as a position-dependent executable on Linux.
//!
//! A position-independent executable (PIE, the default) is relocated by the dynamic loader at
//! every start: the command's dependencies (the object-storage client, TLS, HTTP/2, clap) leave
//! about 20,000 pointers to fix, spread over some 70 pages that each cost a copy-on-write page
//! fault. That is about 0.15 ms of CPU and 0.2 ms of wall time per process, a tenth of packing a
//! tiny file, which is what a job array running one `nc3pack pack` per file pays again and
//! again (docs/performance.md, "Tiny files, one process each").
//!
//! A fixed-address executable gives up address-space randomization of the executable's own
//! image (libraries, heap and stack stay randomized). Set `NC3PACK_PIE=1` when building to keep
//! a PIE, as a distribution's hardening policy may require. Only the command is affected: the
//! library, the Python extension and the netCDF-C plugin are shared objects and stay
//! position-independent.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=NC3PACK_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let keep_pie = std::env::var("NC3PACK_PIE").is_ok_and(|v| !v.is_empty() && v != "0");
    if linux && !keep_pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
