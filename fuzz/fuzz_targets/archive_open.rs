//! Opening arbitrary bytes as an archive; if it opens, every block, every variable, hyperslabs,
//! unpack, and the frame scanner.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nc3pack_fuzz::exercise_archive(data, false);
});
