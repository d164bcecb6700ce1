/* The cost of one decision in a fresh vfork child.
 *   cc -O2 -o vdec vdec.c; install it outside the write set (/opt/execguard-bench/eg-vdec)
 *   vdec N TARGET   (TARGET: a non-executable system ELF, e.g. libm.so.6)
 * This process is preloaded with the variant under test. Each op is vfork, then execve of
 * TARGET (the guard decides; the kernel refuses with EACCES), then _exit and waitpid. It
 * prints the median op in microseconds (wall). No process image is started, so the
 * per-process load cost is left out. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
extern char **environ;
static long long ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static int cmp(const void*a,const void*b){long long x=*(long long*)a,y=*(long long*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){int n=atoi(argv[1]); const char*t=argv[2]; long long *d=malloc(n*sizeof*d);
 char *av[]={(char*)t,0};
 for(int i=0;i<n;i++){long long t0=ns(); pid_t p=vfork(); if(p==0){execve(t,av,environ);_exit(0);} int st; waitpid(p,&st,0); d[i]=ns()-t0;}
 qsort(d,n,sizeof*d,cmp); printf("%.2f\n",d[n/2]/1000.0);}
