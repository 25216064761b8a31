/* A thread-local variable of the program's own: the PT_TLS a PiP root
 * refuses (tests/pip.sh). */
__thread int pip_task_tls_counter = 1;
int pip_task_tls_bump(void);
int pip_task_tls_bump(void)
{
    return ++pip_task_tls_counter;
}
