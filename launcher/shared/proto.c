/*
 * proto.c - parse and build messages of the engine socket (see proto.h).
 * libc only: the SPANK plugin links this file too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static int name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_'))
            return 0;
    return n >= 1 && n <= 31;
}

static int value_ok(const char *s)
{
    size_t n = 0;
    if (s[0] == '=')
        return 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] >= 0x7f)
            return 0;
    return n >= 1 && n <= 1023;
}

int cs_msg_parse(struct cs_msg *m, const char *line, size_t len, char *err, size_t errlen)
{
    char *p, *save = NULL, *w;

    memset(m, 0, sizeof *m - sizeof m->buf);
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len + 1 > CS_PROTO_MAX) {
        snprintf(err, errlen, "request of %zu bytes is longer than the limit of %d", len + 1, CS_PROTO_MAX);
        return -1;
    }
    if (memchr(line, '\0', len) != NULL || memchr(line, '\n', len) != NULL) {
        snprintf(err, errlen, "request holds a NUL or a second line");
        return -1;
    }
    memcpy(m->buf, line, len);
    m->buf[len] = '\0';
    for (p = m->buf; *p; p++)
        if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f) {
            snprintf(err, errlen, "request holds a control or non-ASCII byte at offset %d", (int)(p - m->buf));
            return -1;
        }
    w = strtok_r(m->buf, " ", &save);
    if (w == NULL) {
        snprintf(err, errlen, "empty request");
        return -1;
    }
    if (strcmp(w, CS_PROTO_TAG) != 0) {
        snprintf(err, errlen, "request speaks '%.32s', this engine speaks %s", w, CS_PROTO_TAG);
        return -1;
    }
    m->verb = strtok_r(NULL, " ", &save);
    if (m->verb == NULL || !name_ok(m->verb)) {
        snprintf(err, errlen, "request has no verb (expected a word of a-z and _ after %s)", CS_PROTO_TAG);
        return -1;
    }
    while ((w = strtok_r(NULL, " ", &save)) != NULL) {
        char *eq = strchr(w, '=');
        if (eq == NULL) {
            snprintf(err, errlen, "'%.40s' is not key=value", w);
            return -1;
        }
        *eq = '\0';
        if (!name_ok(w)) {
            snprintf(err, errlen, "bad key '%.40s' (expected 1-31 characters of a-z and _)", w);
            return -1;
        }
        if (!value_ok(eq + 1)) {
            snprintf(err, errlen, "key '%s': bad value (expected 1-1023 printable characters, no space)", w);
            return -1;
        }
        if (cs_msg_get(m, w) != NULL) {
            snprintf(err, errlen, "key '%s' given twice", w);
            return -1;
        }
        if (m->nkv == CS_PROTO_MAXKV) {
            snprintf(err, errlen, "more than %d keys", CS_PROTO_MAXKV);
            return -1;
        }
        m->key[m->nkv] = w;
        m->val[m->nkv++] = eq + 1;
    }
    return 0;
}

const char *cs_msg_get(const struct cs_msg *m, const char *key)
{
    for (int i = 0; i < m->nkv; i++)
        if (strcmp(m->key[i], key) == 0)
            return m->val[i];
    return NULL;
}

int cs_msg_long(const struct cs_msg *m, const char *key, long lo, long hi, int optional, long *out,
                char *err, size_t errlen)
{
    const char *v = cs_msg_get(m, key);
    char *end;
    long x;

    if (v == NULL) {
        if (optional)
            return 1;
        snprintf(err, errlen, "%s: key '%s' missing", m->verb, key);
        return -1;
    }
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi) {
        snprintf(err, errlen, "key '%s': expected an integer in [%ld, %ld], got '%.40s'", key, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cs_req_init(char *b, size_t len, const char *verb)
{
    if (!name_ok(verb) || snprintf(b, len, "%s %s", CS_PROTO_TAG, verb) >= (int)len)
        return -1;
    return 0;
}

int cs_req_add(char *b, size_t len, const char *key, const char *fmt, ...)
{
    char v[1024];
    va_list ap;
    size_t used = strlen(b);
    int n;

    va_start(ap, fmt);
    n = vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof v || !name_ok(key) || !value_ok(v))
        return -1;
    /* the request must stay under the limit with its newline */
    if (used + 1 + strlen(key) + 1 + (size_t)n + 2 > len || used + strlen(key) + (size_t)n + 3 > CS_PROTO_MAX)
        return -1;
    snprintf(b + used, len - used, " %s=%s", key, v);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait for fd to be ready for events until deadline (ms, monotonic). */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = events };
        double left = deadline - now_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        int r = poll(&p, 1, (int)left + 1);
        if (r > 0)
            return 0;
        if (r == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (errno != EINTR)
            return -1;
    }
}

ssize_t cs_proto_recv_fd(int sock, void *buf, size_t len, int flags, int *fdp)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(4 * sizeof(int))];
    } cm;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b };
    ssize_t r = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);

    if (r < 0)
        return r;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n; i++) {
            int got;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
            if (fdp && *fdp < 0 && n == 1 && !(mh.msg_flags & MSG_CTRUNC))
                *fdp = got;
            else
                close(got);
        }
    }
    return r;
}

ssize_t cs_proto_send_fd(int sock, const void *buf, size_t len, int fd)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } cm;
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b };
    struct cmsghdr *h;

    memset(&cm, 0, sizeof cm);
    h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    return sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int cs_proto_call(const char *path, const char *req, char *reply, size_t len, int timeout_ms,
                  char *why, size_t whylen)
{
    return cs_proto_call_fd(path, req, reply, len, timeout_ms, NULL, why, whylen);
}

int cs_proto_call_fd(const char *path, const char *req, char *reply, size_t len, int timeout_ms, int *fdp,
                     char *why, size_t whylen)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    double deadline = now_ms() + timeout_ms;
    size_t got = 0, sent = 0, rlen = strlen(req);
    int fd, e;

    if (fdp)
        *fdp = -1;
    if (strlen(path) >= sizeof a.sun_path) {
        snprintf(why, whylen, "socket path %s is too long", path);
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(a.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        e = errno;
        snprintf(why, whylen, "cannot create a socket: %s", strerror(e));
        errno = e;
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS && errno != EAGAIN) {
        e = errno;
        snprintf(why, whylen, "cannot connect to %s: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    /* only root's engine (or one of our own uid) is talked to: a user's
     * process listening on a stale socket path gets no registration */
    if (wait_fd(fd, POLLOUT, deadline) < 0)
        goto io_fail;
    {
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || (cr.uid != 0 && cr.uid != geteuid())) {
            snprintf(why, whylen, "the server at %s runs as uid %d, not root: not talking to it", path,
                     (int)cr.uid);
            close(fd);
            errno = EPERM;
            return -1;
        }
    }
    while (sent < rlen + 1) {
        const char *p = sent < rlen ? req + sent : "\n";
        size_t n = sent < rlen ? rlen - sent : 1;
        if (wait_fd(fd, POLLOUT, deadline) < 0)
            goto io_fail;
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            goto io_fail;
        }
        sent += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    while (got + 1 < len) {
        if (wait_fd(fd, POLLIN, deadline) < 0)
            goto io_fail;
        ssize_t r = cs_proto_recv_fd(fd, reply + got, len - 1 - got, 0, fdp);
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            goto io_fail;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    reply[got] = '\0';
    close(fd);
    if (got == 0) {
        snprintf(why, whylen, "the engine at %s closed the connection without an answer", path);
        errno = ECONNRESET;
        goto drop_fd;
    }
    return 0;

io_fail:
    e = errno;
    snprintf(why, whylen, "talking to the engine at %s: %s", path,
             e == ETIMEDOUT ? "no answer in time" : strerror(e));
    close(fd);
    errno = e;
drop_fd:
    if (fdp && *fdp >= 0) {
        e = errno;
        close(*fdp);
        *fdp = -1;
        errno = e;
    }
    return -1;
}
