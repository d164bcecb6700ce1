import os, sys, statistics
ws=sys.argv[1]
def cpu(b):
    argv=[b,"run","--workspace",ws,"--","sh","-c","for i in $(seq 100); do git --version >/dev/null; done"]
    pid=os.posix_spawn(argv[0],argv,os.environ)
    _,st,ru=os.wait4(pid,0); assert st==0, st; return (ru.ru_utime+ru.ru_stime)*1000
bs=sys.argv[2:]; s={b:[] for b in bs}
for r in range(25):
    for b in bs: s[b].append(cpu(b))
for b in bs: print(b, f"median {statistics.median(s[b][1:]):.1f} ms per 100 git --version")
