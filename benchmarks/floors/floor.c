/* The least a node agent can do per message, in C: the floor under benchmarks/agent_cost.py's
 * figures. It sends one datagram with the testbed's 32-byte wire header (docs/WIRE.md, a PROBE)
 * and a 64-byte body to its peer at a steady rate, paced against deadlines, receives what comes,
 * and logs a send, a receive and a deliver event per message in the event log's JSON lines
 * (docs/EVENTS.md), one write() per wake-up. It waits in poll() for a datagram or its next send,
 * as the agent's event loop does, and it does nothing else.
 *
 *   floor NODE_ID PEER_NAME PEER_ADDRESS RATE      (TESTBED_NODE and TESTBED_LOG from the testbed)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PORT 7777
#define BODY 64

static double monotonic(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long long realtime_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void put32(unsigned char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static uint32_t get32(const unsigned char *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: floor NODE_ID PEER_NAME PEER_ADDRESS RATE\n");
        return 2;
    }
    uint32_t id = (uint32_t)atoi(argv[1]);
    const char *peer = argv[2], *me = getenv("TESTBED_NODE"), *path = getenv("TESTBED_LOG");
    double rate = atof(argv[4]);
    if (!me || !path || rate <= 0) {
        fprintf(stderr, "floor: TESTBED_NODE, TESTBED_LOG and a rate above 0 are needed\n");
        return 2;
    }
    int log = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    int sock = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in here = {0}, there = {0};
    here.sin_family = AF_INET;
    here.sin_port = htons(PORT);
    bind(sock, (struct sockaddr *)&here, sizeof here);
    fcntl(sock, F_SETFL, O_NONBLOCK);
    there.sin_family = AF_INET;
    there.sin_port = htons(PORT);
    inet_aton(argv[3], &there.sin_addr);

    unsigned char datagram[32 + BODY] = {'T', 'B', 1, 2, 0, 0, 0, 32}, in[2048];
    put32(datagram + 8, id);   /* origin */
    put32(datagram + 16, id);  /* sender */
    datagram[23] = 1;          /* frag_count */
    char out[65536];
    uint32_t seq = 0;
    double period = 1.0 / rate, next = monotonic() + period;
    for (;;) {
        double wait = next - monotonic();
        struct pollfd p = {sock, POLLIN, 0};
        int n = 0, len = 0;
        if (poll(&p, 1, wait > 0 ? (int)(wait * 1000) + 1 : 0) > 0) {
            for (;;) {
                ssize_t got = recv(sock, in, sizeof in, 0);
                if (got < 0) break;
                if (got < 32 || in[0] != 'T' || in[1] != 'B' || len > (int)sizeof out - 512) continue;
                uint32_t origin = get32(in + 8), s = get32(in + 12);
                long long t = realtime_ns();
                len += snprintf(out + len, sizeof out - len,
                                "{\"t\":%lld,\"node\":\"%s\",\"event\":\"receive\",\"type\":\"PROBE\",\"origin\":%u,"
                                "\"seq\":%u,\"bytes\":%d}\n{\"t\":%lld,\"node\":\"%s\",\"event\":\"deliver\","
                                "\"type\":\"PROBE\",\"origin\":%u,\"seq\":%u}\n",
                                t, me, origin, s, (int)got - 32, t, me, origin, s);
                n++;
            }
        }
        if (monotonic() >= next) {
            put32(datagram + 12, ++seq);
            len += snprintf(out + len, sizeof out - len,
                            "{\"t\":%lld,\"node\":\"%s\",\"event\":\"send\",\"type\":\"PROBE\",\"origin\":%u,"
                            "\"seq\":%u,\"to\":\"%s\",\"bytes\":%d}\n", realtime_ns(), me, id, seq, peer, BODY);
            if (write(log, out, len) < 0) return 1;  /* the send event before its datagram */
            len = 0;
            sendto(sock, datagram, sizeof datagram, 0, (struct sockaddr *)&there, sizeof there);
            next += period;
        }
        if (len > 0 && write(log, out, len) < 0) return 1;
    }
}
