/* A one-binary container image for the tests: proves that the testbed needs nothing inside an
 * image (no shell, no ip, no tc). `ifprobe` with no argument waits forever; `ifprobe ifaces`
 * prints each interface with its IPv4 address, as seen from inside the container. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "ifaces") == 0) {
        struct ifaddrs *list, *it;
        if (getifaddrs(&list) != 0) {
            perror("getifaddrs");
            return 1;
        }
        for (it = list; it; it = it->ifa_next) {
            if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET) {
                char text[INET_ADDRSTRLEN];
                struct sockaddr_in *in = (struct sockaddr_in *)it->ifa_addr;
                inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
                printf("%s %s\n", it->ifa_name, text);
            }
        }
        freeifaddrs(list);
        return 0;
    }
    for (;;)
        pause();
}
