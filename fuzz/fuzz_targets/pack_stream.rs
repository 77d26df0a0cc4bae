//! Packing arbitrary bytes as a netCDF-3 file arriving on a pipe (`pack::pack_reader`, as
//! `nc3pack - OUT`) and as a file (`pack_file`): no panic, no huge allocation, clean errors;
//! when packing succeeds, the two archives (1 thread each) are byte-identical and unpack to
//! exactly the input. Input: byte 0 block size (8 ..= 4096), byte 1 options, then the file
//! (see `nc3pack_fuzz::exercise_pack`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nc3pack_fuzz::exercise_pack(data);
});
