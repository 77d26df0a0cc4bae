# R's ncdf4 (Debian's r-cran-ncdf4) reads a file: every dimension, attribute and variable
# printed as text, to compare an original with its archive read through the nc3pack plugin.
# R loads netCDF-C with the package, after a preloaded plugin's constructor has run.
#
# Usage: LD_PRELOAD=libnc3pack_netcdf.so Rscript scripts/plugin-r.R FILE
library(ncdf4)
nc <- nc_open(commandArgs(trailingOnly = TRUE)[1])
for (d in nc$dim) cat("dim", d$name, d$len, d$unlim, "\n")
show <- function(x) print(x, digits = 17)
show(ncatt_get(nc, 0))
for (v in nc$var) {
  cat("var", v$name, v$prec, v$size, "\n")
  show(ncatt_get(nc, v$name))
  show(ncvar_get(nc, v$name, raw_datavals = TRUE))
}
nc_close(nc)
