// <mpi.h> without the MPI-2 C++ bindings (removed in MPI-3; they warn under -Wextra): meshlm
// calls the C API only. Include this instead of <mpi.h>.
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
