/*
 * fuzz.h - shared helpers of the fuzz targets (tests/fuzz/fuzz_*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput. Built with clang it links
 * libFuzzer (`make fuzz`); built with gcc it links replay.c, a cmocka
 * driver that feeds the committed inputs under tests/fuzz/inputs/TARGET to
 * it as unit tests (`make unit`).
 */
#ifndef ISLE_FUZZ_H
#define ISLE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (embedded NULs end it early, as
 * they would when read from a file by a string parser). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * The input as a file for readers that take a path: an anonymous memory
 * file, named through /proc/self/fd. Returns the fd (close it) and fills
 * path, or -1.
 */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char *path,
			       size_t len)
{
	int fd = memfd_create("fuzz", 0);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < size) {
		ssize_t w = write(fd, data + off, size - off);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

#endif /* ISLE_FUZZ_H */
