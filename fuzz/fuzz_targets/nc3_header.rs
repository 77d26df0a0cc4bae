//! The netCDF-3 header parser, the layout, and reads through `NcFile`, on arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nc3pack_fuzz::exercise_nc(data);
});
