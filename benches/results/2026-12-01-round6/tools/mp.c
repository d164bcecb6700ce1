/* What a PROT_NONE hole between a library's segments costs: mmap + munmap of 3 pages,
 * against the same with the middle page mprotected PROT_NONE (one more system call and
 * mapping, as ld.so does for a hole).  cc -O2 -o mp mp.c && ./mp */
#include <stdio.h>
#include <time.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(){int n=100000; for(int k=0;k<2;k++){double t=now();for(int i=0;i<n;i++){char*p=mmap(0,3*4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); if(k) mprotect(p+4096,4096,PROT_NONE); munmap(p,3*4096);} printf("%s %.0f ns\n",k?"with mprotect":"without",(now()-t)/n);}}
