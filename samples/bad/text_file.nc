This is not a netCDF file.
Just some ASCII text.
