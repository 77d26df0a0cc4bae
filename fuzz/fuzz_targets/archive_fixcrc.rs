//! As archive_open, but the harness first recomputes every checksum it can locate, so that
//! mutations get past the CRCs to the structural checks behind them; also runs `verify` and
//! `reindex` (on a scratch file in /dev/shm).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = data.to_vec();
    nc3pack_fuzz::fix_crcs(&mut buf);
    nc3pack_fuzz::exercise_archive(&buf, true);
});
