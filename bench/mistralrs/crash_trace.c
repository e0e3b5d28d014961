// crash_trace.so (LD_PRELOAD): on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, writes to stderr
// the signal, the faulting address, the thread, the raw return addresses of the faulting
// thread's stack and the process's executable mappings, then dies of the same signal. The
// addresses are resolved where the unstripped binaries are (addr2line -e BIN OFFSET, OFFSET =
// address - mapping start + mapping file offset). The GPU machine has no gdb.
//
//   gcc -shared -fPIC -O1 -o crash_trace.so crash_trace.c
//
// Installed before main runs, and again at exit (a library loaded later may have put its own
// handler in place): the crashes it is for happen while the process exits.
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static void say_hex(unsigned long v) {
  char buf[19] = "0x";
  for (int i = 0; i < 16; i++) buf[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
  buf[18] = 0;
  say(buf);
}

static void on_signal(int sig, siginfo_t *info, void *context) {
  (void)context;
  char line[96];
  snprintf(line, sizeof line, "\n== crash_trace: signal %d in thread %ld, address ", sig, (long)syscall(SYS_gettid));
  say(line);
  say_hex((unsigned long)info->si_addr);
  say("\n== crash_trace: stack\n");
  void *frames[64];
  int n = backtrace(frames, 64);
  for (int i = 0; i < n; i++) {
    say("  ");
    say_hex((unsigned long)frames[i]);
    say("\n");
  }
  say("== crash_trace: executable mappings\n");
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd >= 0) {
    // whole lines; only those with an x in their permissions
    char buf[4096], cur[512];
    size_t len = 0;
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
      for (ssize_t i = 0; i < got; i++) {
        if (len < sizeof cur - 1) cur[len++] = buf[i];
        if (buf[i] == '\n') {
          cur[len] = 0;
          char *perm = strchr(cur, ' ');
          if (perm && perm[3] == 'x') say(cur);
          len = 0;
        }
      }
    }
    close(fd);
  }
  say("== crash_trace: end\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &sa, NULL);
}

__attribute__((constructor)) static void crash_trace_init(void) {
  // backtrace loads libgcc_s on its first call: not in a signal handler
  void *warm[2];
  backtrace(warm, 2);
  install();
  atexit(install);
}
