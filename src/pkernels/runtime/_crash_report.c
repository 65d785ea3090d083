/* pkernels.runtime._crash_report: what a kernel that crashes outside a debugger says.
 *
 * A release build does not check its view indices: a bad one may end the program with a
 * fatal signal. Python itself would print "Segmentation fault" and nothing about where.
 * This handler, installed once pkernels loads a kernel, writes what a traceback would:
 * the kernel, its Python file and line (release builds carry line tables: addr2line
 * reads them, in a child process) and the source line, with the way to find the bug
 * (PKERNELS_CHECKS=1, pkdb). Then the signal goes to the handler that was there before
 * (Python's faulthandler, or the default action), so the program ends as Python does on
 * a fatal signal. A signal raised outside kernel code goes straight on.
 *
 * Only async-signal-safe calls run in the handler (write, read, open, vfork, execve,
 * waitpid, sigaction), and dladdr, which only reads the loader's tables.
 */
#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <Python.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_LIBRARIES 4096
#define TEXT 4096

static const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NSIGNALS ((int)(sizeof signals / sizeof signals[0]))
static struct sigaction previous[NSIGNALS];
static int installed = 0;
static char addr2line[TEXT];

/* The loaded kernel libraries: path and workunit name (set outside the handler). */
static struct { char *path; char *kernel; } libraries[MAX_LIBRARIES];
static volatile int nlibraries = 0;

static void put(const char *text) {
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(2, text, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        text += w;
        n -= (size_t)w;
    }
}

static void put_number(unsigned long value) {
    char digits[24];
    int d = 0;
    do { digits[d++] = (char)('0' + value % 10); value /= 10; } while (value > 0 && d < 23);
    char text[24];
    for (int k = 0; k < d; ++k) text[k] = digits[d - 1 - k];
    text[d] = 0;
    put(text);
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (Segmentation fault)";
    case SIGBUS: return "SIGBUS (Bus error)";
    case SIGFPE: return "SIGFPE (Floating-point exception)";
    case SIGILL: return "SIGILL (Illegal instruction)";
    default: return "SIGABRT (Aborted)";
    }
}

static void *program_counter(void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    if (uc == NULL) return NULL;
#if defined(__x86_64__)
    return (void *)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (void *)uc->uc_mcontext.pc;
#else
    return NULL;
#endif
}

/* addr2line's answer for `offset` in `library` (function and file:line pairs, the
 * innermost inlined frame first) into out; its length. */
static size_t ask_addr2line(const char *library, unsigned long offset, char *out, size_t size) {
    if (addr2line[0] == 0) return 0;
    char hex[24] = "0x";
    int d = 0;
    char digits[20];
    do { digits[d++] = "0123456789abcdef"[offset % 16]; offset /= 16; } while (offset && d < 19);
    for (int k = 0; k < d; ++k) hex[2 + k] = digits[d - 1 - k];
    hex[2 + d] = 0;
    int fds[2];
    if (pipe(fds) != 0) return 0;
    pid_t child = vfork();
    if (child == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        char *const argv[] = {addr2line, "-f", "-i", "-C", "-e", (char *)library, hex, NULL};
        char *const envp[] = {NULL};
        execve(addr2line, argv, envp);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    if (child > 0) {
        while (n + 1 < size) {
            ssize_t r = read(fds[0], out + n, size - 1 - n);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            n += (size_t)r;
        }
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
    }
    close(fds[0]);
    out[n] = 0;
    return n;
}

/* Line `line` of `path` (without its indentation) into out. */
static void source_line(const char *path, long line, char *out, size_t size) {
    out[0] = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    char buf[TEXT];
    long current = 1;
    size_t n = 0;
    int started = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (ssize_t k = 0; k < r; ++k) {
            char c = buf[k];
            if (current == line) {
                if (c == '\n') { close(fd); out[n] = 0; return; }
                if (!started && (c == ' ' || c == '\t')) continue;
                started = 1;
                if (n + 1 < size) out[n++] = c;
            } else if (c == '\n') {
                ++current;
            }
        }
    }
    close(fd);
    out[n] = 0;
}

/* The innermost frame of addr2line's answer whose file is Python: its file and line
 * (`file` points into `answer`, which is cut into lines). 0 when there is none. */
static int python_frame(char *answer, char **file, long *line) {
    char *lines[64];
    int count = 0;
    for (char *p = answer; *p && count < 64;) {
        lines[count++] = p;
        char *end = strchr(p, '\n');
        if (end == NULL) break;
        *end = 0;
        p = end + 1;
    }
    for (int k = 1; k < count; k += 2) { /* function names, then file:line */
        char *place = lines[k];
        char *colon = strrchr(place, ':');
        if (colon == NULL || colon - place < 3 || strncmp(colon - 3, ".py", 3) != 0) continue;
        *colon = 0;
        long value = 0;
        for (char *c = colon + 1; *c >= '0' && *c <= '9'; ++c) value = value * 10 + (*c - '0');
        *file = place;
        *line = value;
        return 1;
    }
    return 0;
}

/* The workunit whose kernel library holds `pc`, or NULL. */
static const char *kernel_at(void *pc, Dl_info *info) {
    if (pc == NULL || dladdr(pc, info) == 0 || info->dli_fname == NULL) return NULL;
    int known = nlibraries;
    for (int k = 0; k < known; ++k) {
        if (strcmp(libraries[k].path, info->dli_fname) == 0) return libraries[k].kernel;
    }
    return NULL;
}

static void report(int sig, const char *kernel, void *pc, Dl_info *info) {
    put("\npkernels: kernel ");
    put(kernel);
    put(" received ");
    put(signal_name(sig));
    put(" in its release build:\n");
    static char answer[TEXT];
    unsigned long offset = (unsigned long)((char *)pc - (char *)info->dli_fbase);
    char *file;
    long line;
    if (ask_addr2line(info->dli_fname, offset, answer, sizeof answer) > 0 &&
        python_frame(answer, &file, &line)) {
        put("  File \"");
        put(file);
        put("\", line ");
        put_number((unsigned long)line);
        put(", in ");
        put(kernel); /* a release build's line table names no inlined function */
        put("\n");
        static char text[TEXT];
        source_line(file, line, text, sizeof text);
        if (text[0]) {
            put("    ");
            put(text);
            put("\n");
        }
    } else {
        put("  (no Python line found for ");
        put(info->dli_fname);
        put(")\n");
    }
    put("Release builds do not check view indices: run it again with PKERNELS_CHECKS=1 to "
        "have a bad index raise IndexError (pkernels.KernelIndexError) at its line, or debug "
        "it with pkdb (python -m pkdb PROGRAM).\n");
}

static void on_signal(int sig, siginfo_t *si, void *context) {
    static int reporting = 0;
    int saved = errno;
    void *pc = program_counter(context);
    Dl_info info;
    const char *kernel = kernel_at(pc, &info);
    if (kernel != NULL) {
        if (__atomic_exchange_n(&reporting, 1, __ATOMIC_ACQ_REL)) {
            /* Another thread of the kernel crashed first: its report, then the previous
             * handler, end the program; this thread waits for that. */
            for (;;) pause();
        }
        report(sig, kernel, pc, &info);
    }
    for (int k = 0; k < NSIGNALS; ++k) {
        if (signals[k] == sig) sigaction(sig, &previous[k], NULL);
    }
    errno = saved;
    /* Returning runs the faulting instruction again, now under the previous handler; a
     * signal that was sent (abort()) is sent again. */
    if (si != NULL && si->si_code <= 0) raise(sig);
}

PyDoc_STRVAR(install_doc,
"install(addr2line)\n--\n\n"
"Install the crash report for kernels (once; later calls do nothing). ``addr2line``:\n"
"the path of binutils' addr2line, which reads a library's line table (\"\": none).");

static PyObject *install(PyObject *module, PyObject *args) {
    const char *tool;
    if (!PyArg_ParseTuple(args, "s", &tool)) return NULL;
    if (installed) Py_RETURN_NONE;
    snprintf(addr2line, sizeof addr2line, "%s", tool);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    for (int k = 0; k < NSIGNALS; ++k) sigaction(signals[k], &action, &previous[k]);
    installed = 1;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(register_doc,
"register(library, kernel)\n--\n\n"
"Name the workunit whose kernel library ``library`` (a loaded path) is, for reports.");

static PyObject *register_library(PyObject *module, PyObject *args) {
    const char *path, *kernel;
    if (!PyArg_ParseTuple(args, "ss", &path, &kernel)) return NULL;
    int n = nlibraries;
    if (n >= MAX_LIBRARIES) Py_RETURN_NONE;
    libraries[n].path = strdup(path);
    libraries[n].kernel = strdup(kernel);
    if (libraries[n].path == NULL || libraries[n].kernel == NULL) return PyErr_NoMemory();
    nlibraries = n + 1; /* published once the entry is whole */
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS, install_doc},
    {"register", register_library, METH_VARARGS, register_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pkernels.runtime._crash_report",
    "What a kernel that crashes outside a debugger says (see _crash_report.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__crash_report(void) { return PyModule_Create(&module_def); }
