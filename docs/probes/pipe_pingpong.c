/*
 * pipe_pingpong.c - a probe, not an experiment of mqs-bench: a one-byte
 * round trip over two pipes, two kernel threads with blocking read/write
 * against two tasks with mqs_read/mqs_write (policy mq; the argument is
 * the number of workers), and the floor: one thread making the same four
 * system calls per round trip (write, read on each pipe) with no switch.
 * docs/benchmarks.md, "I/O over the poller".
 */
#include <mqs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
enum { N = 200000 };
static int a2b[2], b2a[2];
static void *ping_t(void *x){ char c='x'; for(int i=0;i<N;i++){ mqs_write(a2b[1],&c,1); mqs_read(b2a[0],&c,1);} return x; }
static void *pong_t(void *x){ char c; for(int i=0;i<N;i++){ mqs_read(a2b[0],&c,1); mqs_write(b2a[1],&c,1);} return x; }
static void *ping_k(void *x){ char c='x'; for(int i=0;i<N;i++){ if(write(a2b[1],&c,1)!=1||read(b2a[0],&c,1)!=1) abort();} return x; }
static void *pong_k(void *x){ char c; for(int i=0;i<N;i++){ if(read(a2b[0],&c,1)!=1||write(b2a[1],&c,1)!=1) abort();} return x; }
static double floor_us(void){ char c='x'; uint64_t t0=mqs_now_ns(); for(int i=0;i<N;i++){ if(write(a2b[1],&c,1)!=1||read(a2b[0],&c,1)!=1||write(b2a[1],&c,1)!=1||read(b2a[0],&c,1)!=1) abort();} return (mqs_now_ns()-t0)/1e3/N; }
int main(int argc,char**argv){
  int workers = argc>1?atoi(argv[1]):1;
  if(pipe(a2b)||pipe(b2a)) abort();
  double fl=floor_us();
  uint64_t t0=mqs_now_ns(); pthread_t x,y; pthread_create(&x,0,ping_k,0); pthread_create(&y,0,pong_k,0); pthread_join(x,0); pthread_join(y,0);
  uint64_t t1=mqs_now_ns();
  mqs_config_t c; mqs_config_init(&c); c.workers=workers; mqs_runtime_t *rt; mqs_runtime_create(&rt,&c);
  mqs_task_t *p,*q; uint64_t t2=mqs_now_ns(); mqs_spawn(rt,&p,0,ping_t,0); mqs_spawn(rt,&q,0,pong_t,0); mqs_join(p,0); mqs_join(q,0); uint64_t t3=mqs_now_ns();
  printf("round trip: floor (4 syscalls, one thread) %.2f us, kernel threads %.2f us, mqs tasks (%d workers, mq) %.2f us\n",fl,(t1-t0)/1e3/N,workers,(t3-t2)/1e3/N);
  mqs_runtime_destroy(rt); return 0; }
