#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long cpu(){ struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec*1000000000L+t.tv_nsec; }
int main(int c,char**v){ prctl(PR_SET_NO_NEW_PRIVS,1,0,0,0); int n=atoi(v[1]); struct sock_filter f[1024]; int k=0;
 f[k++]=(struct sock_filter)BPF_STMT(BPF_LD|BPF_W|BPF_ABS,0);
 f[k++]=(struct sock_filter)BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K,100000,1,0); /* nr==100000 → chain, else allow */
 f[k++]=(struct sock_filter)BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_ALLOW);
 for(int i=0;i<n;i++) f[k++]=(struct sock_filter)BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K,1000+i,0,0);
 f[k++]=(struct sock_filter)BPF_STMT(BPF_RET|BPF_K,SECCOMP_RET_ALLOW);
 struct sock_fprog p={k,f}; long t0=cpu(); if(syscall(SYS_seccomp,SECCOMP_SET_MODE_FILTER,0,&p)) {perror("seccomp"); exit(1);} printf("%ld\n",(cpu()-t0)/1000); }
