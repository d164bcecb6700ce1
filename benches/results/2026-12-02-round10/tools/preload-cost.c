/* What loading one preload library costs a process: forks and execs /bin/true N times for each
 * LD_PRELOAD value given ("-" for none), rotating the order every round, and prints the mean
 * CPU time (user + system, getrusage of the children) per process. The parent loads nothing.
 *   cc -O2 -o preload-cost preload-cost.c
 *   POL="EXECGUARD_POLICY=$(cat benches/harness/bench-policy.toml)" ./preload-cost 3000 - A.so B.so
 * POL, when set, is passed to every child (host mode: the guard captures it at load). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/time.h>
extern char **environ;
static double cpu(void){struct rusage r;getrusage(RUSAGE_CHILDREN,&r);return r.ru_utime.tv_sec*1e6+r.ru_utime.tv_usec+r.ru_stime.tv_sec*1e6+r.ru_stime.tv_usec;}
int main(int argc,char**argv){
  int n=atoi(argv[1]); int nv=argc-2; // each arg: LD_PRELOAD value or "-" for none
  double tot[16]={0};
  char *args[]={"/bin/true",0};
  for(int i=0;i<n;i++){
    for(int v=0;v<nv;v++){
      int vv=(v+i)%nv;
      char pre[512]; char *env[4]; int k=0;
      env[k++]="PATH=/usr/bin:/bin";
      if(strcmp(argv[2+vv],"-")){snprintf(pre,sizeof pre,"LD_PRELOAD=%s",argv[2+vv]);env[k++]=pre;}
      if(getenv("POL")) env[k++]=getenv("POL");
      env[k]=0;
      double a=cpu();
      pid_t p=fork(); if(!p){execve(args[0],args,env);_exit(127);}
      int st; waitpid(p,&st,0); if(st){fprintf(stderr,"fail %s\n",argv[2+vv]);return 1;}
      tot[vv]+=cpu()-a;
    }
  }
  for(int v=0;v<nv;v++) printf("%-50s %8.1f us\n",argv[2+v],tot[v]/n);
}
