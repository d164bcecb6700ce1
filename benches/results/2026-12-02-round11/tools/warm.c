#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
extern char **environ;
int main(int argc,char**argv){ int n=atoi(argv[1]); char *t=argv[2]; char *a[]={t,0};
 struct timespec s,e; clock_gettime(CLOCK_MONOTONIC,&s);
 for(int i=0;i<n;i++) execve(t,a,environ);
 clock_gettime(CLOCK_MONOTONIC,&e); printf("%.3f us/call\n",((e.tv_sec-s.tv_sec)*1e9+(e.tv_nsec-s.tv_nsec))/1e3/n); }
