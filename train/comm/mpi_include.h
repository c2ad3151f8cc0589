// mpi.h for the MPI backend's internals, C API only: Open MPI's deprecated C++ bindings would
// need libmpi_cxx at link time. Never included from a public header.
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
