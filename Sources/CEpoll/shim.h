/* Linux's epoll, which Swift's Glibc module leaves out: the gateway's event loops wait on it. */
#include <sys/epoll.h>
