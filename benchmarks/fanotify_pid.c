#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/fanotify.h>
#include <sys/wait.h>
#include <errno.h>
#include <string.h>
/* Can a build be traced without stopping its processes? fanotify reports file opens
   asynchronously; a tracer needs the pid of each opener. Run as the checks' unprivileged
   uid (the daemon's container has no capability) and as root (docs/daemon.md, "Why no
   tracer without stops"): it watches folder argv[1] (which holds a file "f"), lets a
   child open that file, and prints the pid the kernel reports against the child's.

     gcc -O2 -o /tmp/fanotify_pid benchmarks/fanotify_pid.c
     mkdir -p /tmp/fan && touch /tmp/fan/f && chmod -R a+rwx /tmp/fan
     setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/fanotify_pid /tmp/fan
     /tmp/fanotify_pid /tmp/fan
*/
int main(int argc, char **argv) {
    int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME, O_RDONLY);
    if (fd < 0) { printf("fanotify_init: %s\n", strerror(errno)); return 1; }
    if (fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN | FAN_EVENT_ON_CHILD, AT_FDCWD, argv[1]) < 0) {
        printf("fanotify_mark: %s\n", strerror(errno)); return 1; }
    if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, argv[1]) < 0)
        printf("mount mark: %s\n", strerror(errno));
    char path[4096]; snprintf(path, sizeof path, "%s/f", argv[1]);
    pid_t child = fork();
    if (child == 0) { int f = open(path, O_RDONLY); close(f); _exit(0); }
    waitpid(child, NULL, 0);
    char buf[8192]; ssize_t n = read(fd, buf, sizeof buf);
    for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n))
        printf("event mask %llx pid %d (the child was %d, I am %d)\n", (unsigned long long)m->mask, m->pid, child, getpid());
    return 0;
}
