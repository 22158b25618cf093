/* SPDX-License-Identifier: MIT
 * sys.c - the default OS call table (see sys.h). */
#include "sys.h"

#include <fcntl.h>
#include <unistd.h>

struct bbx_sys bbx_sys = {
	.write = write,
	.copy_file_range = copy_file_range,
	.linkat = linkat,
	.fdatasync = fdatasync,
	.fsync = fsync,
};
