/* Per-hop CPU cost of the exec chain: fork + execve(chain, hops) N times per library, rotated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>
extern char **environ;
static double cpu(void){struct rusage r;getrusage(RUSAGE_CHILDREN,&r);return r.ru_utime.tv_sec*1e6+r.ru_utime.tv_usec+r.ru_stime.tv_sec*1e6+r.ru_stime.tv_usec;}
int main(int argc,char**argv){
  int n=atoi(argv[1]); char *chain=argv[2]; char *hops=argv[3]; int nv=argc-4;
  double tot[16]={0};
  char *args[]={chain,hops,0};
  for(int i=0;i<n;i++){
    for(int v=0;v<nv;v++){
      int vv=(v+i)%nv;
      char pre[512]; char *env[4]; int k=0;
      env[k++]="PATH=/usr/bin:/bin";
      if(strcmp(argv[4+vv],"-")){snprintf(pre,sizeof pre,"LD_PRELOAD=%s",argv[4+vv]);env[k++]=pre;}
      if(getenv("POL")) env[k++]=getenv("POL");
      env[k]=0;
      double a=cpu();
      pid_t p=fork(); if(!p){execve(args[0],args,env);_exit(127);}
      int st; waitpid(p,&st,0); if(st){fprintf(stderr,"fail %s\n",argv[4+vv]);return 1;}
      tot[vv]+=cpu()-a;
    }
  }
  for(int v=0;v<nv;v++) printf("%-50s %8.1f us/run\n",argv[4+v],tot[v]/n);
}
