/* coupler_rank_address OUTDIR: one MPI rank's view of where it runs, for the multi-host tests.
 * Each rank writes OUTDIR/rank-<rank>.txt holding its first non-loopback IPv4 address, its host
 * name, the world size and the sum of an Allreduce of 1 over the world: a sum equal to the world
 * size proves the ranks really talked to each other, the addresses say across which hosts. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first IPv4 address of an up, non-loopback interface, or "none". */
static void OwnAddress(char* out, size_t size) {
  snprintf(out, size, "none");
  struct ifaddrs* all = NULL;
  if (getifaddrs(&all) != 0) return;
  for (struct ifaddrs* i = all; i != NULL; i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
    const struct sockaddr_in* a = (const struct sockaddr_in*)i->ifa_addr;
    if (inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)size) != NULL) break;
  }
  freeifaddrs(all);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: coupler_rank_address OUTDIR\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, one = 1, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reduced = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  char address[INET_ADDRSTRLEN + 8];
  OwnAddress(address, sizeof(address));
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) snprintf(host, sizeof(host), "unknown");

  /* Written under a temporary name and renamed, so a reader never sees half a file. */
  char path[4096], tmp[4200];
  snprintf(path, sizeof(path), "%s/rank-%d.txt", argv[1], rank);
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  int rc = 0;
  if (f == NULL) {
    perror(tmp);
    rc = 1;
  } else {
    fprintf(f, "address=%s\nhost=%s\nsize=%d\nsum=%d\n", address, host, size,
            reduced == MPI_SUCCESS ? sum : -1);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
      perror(path);
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
