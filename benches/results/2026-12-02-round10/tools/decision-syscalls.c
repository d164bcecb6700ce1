/* What the guard's warm decision asks of the kernel, timed one call at a time: the seven system
 * calls a warm allow of /usr/lib/x86_64-linux-gnu/libm.so.6 makes (strace), then the execve the
 * kernel refuses with EACCES (plain's warm_call_eacces). Means over 100,000 rounds, each with
 * two clock_gettime calls' overhead (about 40 ns).
 *   cc -O2 -o decision-syscalls decision-syscalls.c && ./decision-syscalls */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <linux/openat2.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(){int n=100000; const char*p="/usr/lib/x86_64-linux-gnu/libm.so.6"; char buf[256]; struct stat st;
sigset_t all,old; sigfillset(&all);
double t[8]={0};
for(int i=0;i<n;i++){
 double a=now(); syscall(SYS_rt_sigprocmask,SIG_SETMASK,&all,&old,8); double b=now(); t[0]+=b-a;
 struct open_how h={.flags=O_RDONLY|O_NOCTTY|O_NONBLOCK|O_CLOEXEC,.resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_NO_SYMLINKS};
 a=now(); int fd=syscall(SYS_openat2,AT_FDCWD,p,&h,sizeof h); b=now(); t[1]+=b-a;
 a=now(); fstatat(fd,"",&st,AT_EMPTY_PATH); b=now(); t[2]+=b-a;
 a=now(); pread(fd,buf,256,0); b=now(); t[3]+=b-a;
 a=now(); close(fd); b=now(); t[4]+=b-a;
 a=now(); syscall(SYS_geteuid); b=now(); t[5]+=b-a;
 a=now(); syscall(SYS_rt_sigprocmask,SIG_SETMASK,&old,0,8); b=now(); t[6]+=b-a;
 a=now(); execve(p,(char*[]){"x",0},(char*[]){0}); b=now(); t[7]+=b-a;
}
const char*nm[]={"sigmask","openat2","fstat","pread","close","geteuid","sigmask2","execve-eacces"};
double s=0; for(int k=0;k<8;k++){printf("%-14s %6.0f ns\n",nm[k],t[k]/n); if(k<7)s+=t[k]/n;} printf("decision syscalls %.0f ns\n",s);
}
