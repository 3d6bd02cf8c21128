// csleep is the sandbox tests' C guest (a WASI command built with clang and
// wasi-libc): it sleeps for argv[1] seconds with sleep(3), which wasi-libc
// turns into poll_oneoff, then prints "woke". The tests give it a timeout far
// shorter than the sleep.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	unsigned secs = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
	sleep(secs);
	puts("woke");
	return 0;
}
