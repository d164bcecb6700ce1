/* What preloading a library costs a process that never execs.
 *   cc -O2 -o spawnld spawnld.c
 *   ./spawnld N none LIB...   (run from /, EXECGUARD_POLICY set for the guard)
 * This process is not preloaded. It posix_spawns /bin/true N times per variant, with
 * LD_PRELOAD=LIB in the child's environment only, over 10 rounds, rotating the variants.
 * It prints each variant's CPU time per spawn (user + system of this process and its
 * children) and the ratio to `none`. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static double ucpu(void){struct rusage b;getrusage(RUSAGE_CHILDREN,&b);return b.ru_utime.tv_sec*1e6+b.ru_utime.tv_usec;}
static double cpu(void){struct rusage a,b;getrusage(RUSAGE_SELF,&a);getrusage(RUSAGE_CHILDREN,&b);
 return (a.ru_utime.tv_sec+b.ru_utime.tv_sec+a.ru_stime.tv_sec+b.ru_stime.tv_sec)*1e6+(a.ru_utime.tv_usec+b.ru_utime.tv_usec+a.ru_stime.tv_usec+b.ru_stime.tv_usec);}
int main(int argc,char**argv){
 int n=atoi(argv[1]); int nv=argc-2; char **libs=argv+2;
 int rounds=10; double tot[16]={0},ut[16]={0};
 char *envs[16][64];
 for(int v=0;v<nv;v++){int k=0; for(char**e=environ;*e&&k<60;e++) if(strncmp(*e,"LD_PRELOAD=",11)) envs[v][k++]=*e;
   if(strcmp(libs[v],"none")){char*s=malloc(strlen(libs[v])+12);sprintf(s,"LD_PRELOAD=%s",libs[v]);envs[v][k++]=s;} envs[v][k]=0;}
 char *av[]={"/bin/true",0};
 for(int r=0;r<rounds;r++) for(int j=0;j<nv;j++){int v=(j+r)%nv; double t0=cpu(),u0=ucpu();
   for(int i=0;i<n;i++){pid_t p; if(posix_spawn(&p,"/bin/true",0,0,av,envs[v])) return 1; int st; waitpid(p,&st,0);}
   tot[v]+=cpu()-t0; ut[v]+=ucpu()-u0;}
 for(int v=0;v<nv;v++) printf("%-45s %.2f us/spawn (%.3fx) child user %.2f\n",libs[v],tot[v]/rounds/n,tot[v]/tot[0],ut[v]/rounds/n);
}
