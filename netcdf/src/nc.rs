//! netCDF-C's constants that the plugin uses (netcdf.h, the same in 4.9 and 4.10).
#![allow(missing_docs)]

use std::os::raw::c_int;

pub const NC_NOERR: c_int = 0;
pub const NC_EBADID: c_int = -33;
pub const NC_EINVAL: c_int = -36;
pub const NC_EPERM: c_int = -37;
pub const NC_ENOTINDEFINE: c_int = -38;
pub const NC_EINVALCOORDS: c_int = -40;
pub const NC_ENOTATT: c_int = -43;
pub const NC_EBADTYPE: c_int = -45;
pub const NC_EBADDIM: c_int = -46;
pub const NC_ENOTVAR: c_int = -49;
pub const NC_EGLOBAL: c_int = -50;
pub const NC_ENOTNC: c_int = -51;
pub const NC_ECHAR: c_int = -56;
pub const NC_EEDGE: c_int = -57;
pub const NC_ESTRIDE: c_int = -58;
pub const NC_ERANGE: c_int = -60;
pub const NC_EIO: c_int = -68;
pub const NC_EINTERNAL: c_int = -92;
pub const NC_ENOTNC4: c_int = -111;
pub const NC_ENOGRP: c_int = -125;
pub const NC_ENOFILTER: c_int = -136;
pub const NC_EINMEMORY: c_int = -135;

pub const NC_NAT: c_int = 0;
pub const NC_CHAR: c_int = 2;
pub const NC_MAX_ATOMIC_TYPE: c_int = 12;
pub const NC_GLOBAL: c_int = -1;
pub const NC_MAX_NAME: usize = 256;
pub const NC_WRITE: c_int = 0x0001;
pub const NC_DISKLESS: c_int = 0x0008;
pub const NC_MMAP: c_int = 0x0010;
pub const NC_INMEMORY: c_int = 0x8000;
pub const NC_64BIT_DATA: c_int = 0x0020;
pub const NC_64BIT_OFFSET: c_int = 0x0200;
pub const NC_UDF0: c_int = 0x0040;
pub const NC_UDF1: c_int = 0x0080;
pub const NC_NETCDF4: c_int = 0x1000;
pub const NC_FORMAT_CLASSIC: c_int = 1;
pub const NC_FORMAT_64BIT_OFFSET: c_int = 2;
pub const NC_FORMAT_64BIT_DATA: c_int = 5;
pub const NC_FORMATX_NC3: c_int = 1;
pub const NC_FORMATX_UDF0: c_int = 8;
pub const NC_CONTIGUOUS: c_int = 1;
pub const NC_ENDIAN_BIG: c_int = 2;
/// The dispatch table version of netCDF-C 4.9.x and 4.10.x.
pub const NC_DISPATCH_VERSION: c_int = 5;
/// The largest stride netCDF-C accepts (exclusive).
pub const X_INT_MAX: u64 = 2_147_483_647;

/// netCDF-C's `NC_memio` (netcdf_mem.h): the buffer of `nc_open_mem` and `nc_open_memio`,
/// handed to a format's open as its `parameters` when the mode has `NC_INMEMORY`.
#[repr(C)]
pub struct NcMemio {
    pub size: usize,
    pub memory: *mut std::os::raw::c_void,
    pub flags: c_int,
}
