! A Fortran program reads a hyperslab through netCDF-Fortran (and so netCDF-C and, for an
! archive, the nc3pack plugin): records 3 to 5 of f3(three, time) of samples/classic_records.nc,
! and every dimension. scripts/plugin-test.sh runs it on the original and on its archive and
! compares the outputs.
! Build: gfortran -o plugin-fortran scripts/plugin-fortran.f90 -I/usr/include -lnetcdff
program plugin_fortran
  use netcdf
  implicit none
  character(len=1024) :: path
  character(len=nf90_max_name) :: name
  integer :: ncid, varid, ndims, d, len, status
  real :: vals(3, 3)
  call get_command_argument(1, path)
  call check(nf90_open(trim(path), nf90_nowrite, ncid))
  call check(nf90_inquire(ncid, nDimensions=ndims))
  do d = 1, ndims
    call check(nf90_inquire_dimension(ncid, d, name=name, len=len))
    print '(a, 1x, i0)', trim(name), len
  end do
  call check(nf90_inq_varid(ncid, "f3", varid))
  call check(nf90_get_var(ncid, varid, vals, start=[1, 3], count=[3, 3]))
  print '(3es16.7)', vals
  status = nf90_put_var(ncid, varid, vals, start=[1, 3], count=[3, 3])
  print '(a, 1x, a)', 'write:', trim(nf90_strerror(status))
  call check(nf90_close(ncid))
contains
  subroutine check(status)
    integer, intent(in) :: status
    if (status /= nf90_noerr) then
      print '(a)', trim(nf90_strerror(status))
      stop 1
    end if
  end subroutine check
end program plugin_fortran
