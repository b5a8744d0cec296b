! ompshim_f - the Fortran (gfortran, libgomp) side of tests/57-omp-shim.bats
! (libcosched-omp.so, issue 14).
!
!   ompshim_f CPULIST [CPULIST ...]       e.g.  ompshim_f 0,1 0 0,1
!
! One phase per argument: first `taskset -a -p -c CPULIST PID` (all threads,
! as cosched's affinity backend does to a running job) and a pause of 0.15 s,
! then the same regions, each printing
!
!   phase=P cpus=K region=NAME team=T [inner=I] [max=M] ok|BAD: what
!
! with K the number of CPUs in CPULIST, T omp_get_num_threads() in the region
! (all threads must agree), I the team of a nested region, M what
! omp_get_max_threads() said just before.  Results are compared with the
! closed form; exit status 1 if any is wrong, 2 if taskset fails.
program ompshim_f
  use omp_lib
  implicit none
  integer, parameter :: n = 100000
  integer(8), parameter :: want = int(n, 8) * int(n - 1, 8) / 2
  integer :: hits(0:n-1)
  integer :: phase, ncpus, failed, team, inner, mx, nt, me, i, st
  integer(8) :: s
  logical :: seen
  character(len=256) :: list, cmd

  failed = 0
  do phase = 1, command_argument_count()
     call get_command_argument(phase, list)
     ncpus = 1
     do i = 1, len_trim(list)
        if (list(i:i) == ',') ncpus = ncpus + 1
     end do
     ! taskset -a fails when a thread ends while it walks them: try again
     write (cmd, '(a,a,a,i0,a)') 'taskset -a -p -c ', trim(list), ' ', getpid(), ' >/dev/null 2>&1'
     do i = 1, 5
        call execute_command_line(trim(cmd), exitstat=st)
        if (st == 0) exit
     end do
     if (st /= 0) then
        write (0, '(a,a,a)') 'ompshim_f: `', trim(cmd), '` failed'
        stop 2
     end if
     ! a change from outside the program, which cosched did not make: the
     ! shim sees it within a clock tick without a page (cosched-omp.c); the
     ! first region must not start in the tick of the last one (as ompshim.c)
     call execute_command_line('sleep 0.15', exitstat=st)

     ! reduction, work split by omp_get_num_threads()
     s = 0
     team = 0
     !$omp parallel private(nt, me, i) reduction(+:s)
     nt = omp_get_num_threads()
     me = omp_get_thread_num()
     call merge(team, nt)
     do i = int(int(n, 8) * me / nt), int(int(n, 8) * (me + 1) / nt) - 1
        s = s + i
     end do
     !$omp end parallel
     call report('reduce', team, -1, -1, s)

     ! worksharing loops, static with a reduction, dynamic and guided
     s = 0
     team = 0
     hits = 0
     seen = .false.
     !$omp parallel do schedule(static) reduction(+:s) firstprivate(seen)
     do i = 0, n - 1
        if (.not. seen) then
           seen = .true.
           call merge(team, omp_get_num_threads())
        end if
        hits(i) = hits(i) + 1
        s = s + i
     end do
     !$omp end parallel do
     call report_hits('static', team, s)

     s = 0
     team = 0
     hits = 0
     !$omp parallel do schedule(dynamic, 7) firstprivate(seen)
     do i = 0, n - 1
        if (.not. seen) then
           seen = .true.
           call merge(team, omp_get_num_threads())
        end if
        hits(i) = hits(i) + 1
     end do
     !$omp end parallel do
     call report_hits('dynamic', team, -1_8)

     s = 0
     team = 0
     hits = 0
     !$omp parallel do schedule(guided, 5) firstprivate(seen)
     do i = 0, n - 1
        if (.not. seen) then
           seen = .true.
           call merge(team, omp_get_num_threads())
        end if
        hits(i) = hits(i) + 1
     end do
     !$omp end parallel do
     call report_hits('guided', team, -1_8)

     ! nested: the inner team keeps its ICV (2)
     s = 0
     team = 0
     inner = 0
     call omp_set_max_active_levels(2)
     !$omp parallel private(nt, me) reduction(+:s)
     nt = omp_get_num_threads()
     me = omp_get_thread_num()
     call merge(team, nt)
     call omp_set_num_threads(2)
     !$omp parallel private(i) reduction(+:s)
     call merge(inner, omp_get_num_threads())
     do i = int(int(n, 8) * me / nt) + omp_get_thread_num(), int(int(n, 8) * (me + 1) / nt) - 1, &
          omp_get_num_threads()
        s = s + i
     end do
     !$omp end parallel
     !$omp end parallel
     call omp_set_max_active_levels(1)
     call report('nested', team, inner, -1, s)

     ! num_threads(2) keeps 2
     s = 0
     team = 0
     !$omp parallel num_threads(2) private(nt, me, i) reduction(+:s)
     nt = omp_get_num_threads()
     me = omp_get_thread_num()
     call merge(team, nt)
     do i = me, n - 1, nt
        s = s + i
     end do
     !$omp end parallel
     call report('clause', team, -1, -1, s)

     ! the work is split in omp_get_max_threads() parts before the region
     mx = omp_get_max_threads()
     s = 0
     team = 0
     !$omp parallel private(me, i) reduction(+:s)
     me = omp_get_thread_num()
     call merge(team, omp_get_num_threads())
     if (me < mx) then
        do i = int(int(n, 8) * me / mx), int(int(n, 8) * (me + 1) / mx) - 1
           s = s + i
        end do
     end if
     !$omp end parallel
     if (team /= mx) then
        call bad('max', team, -1, mx, 'omp_get_max_threads() differs from the team size')
     else
        call report('max', team, -1, mx, s)
     end if
  end do
  if (failed /= 0) stop 1

contains

  subroutine merge(t, v)
    integer, intent(inout) :: t
    integer, intent(in) :: v
    !$omp critical (team_merge)
    if (t == 0) then
       t = v
    else if (t /= v) then
       t = -1
    end if
    !$omp end critical (team_merge)
  end subroutine merge

  subroutine line(region, t, inr, m)
    character(len=*), intent(in) :: region
    integer, intent(in) :: t, inr, m
    write (*, '(a,i0,a,i0,a,a,a,i0)', advance='no') 'phase=', phase, ' cpus=', ncpus, &
         ' region=', region, ' team=', t
    if (inr >= 0) write (*, '(a,i0)', advance='no') ' inner=', inr
    if (m >= 0) write (*, '(a,i0)', advance='no') ' max=', m
  end subroutine line

  subroutine bad(region, t, inr, m, what)
    character(len=*), intent(in) :: region, what
    integer, intent(in) :: t, inr, m
    call line(region, t, inr, m)
    write (*, '(a,a)') ' BAD: ', what
    failed = 1
  end subroutine bad

  subroutine report(region, t, inr, m, sum)
    character(len=*), intent(in) :: region
    integer, intent(in) :: t, inr, m
    integer(8), intent(in) :: sum
    character(len=100) :: what
    if (sum /= want) then
       write (what, '(a,i0,a,i0)') 'sum ', sum, ', want ', want
       call bad(region, t, inr, m, trim(what))
    else
       call line(region, t, inr, m)
       write (*, '(a)') ' ok'
    end if
  end subroutine report

  ! every item done once, and the reduction's sum if there was one
  subroutine report_hits(region, t, sum)
    character(len=*), intent(in) :: region
    integer, intent(in) :: t
    integer(8), intent(in) :: sum
    character(len=100) :: what
    integer :: j
    do j = 0, n - 1
       if (hits(j) /= 1) then
          write (what, '(a,i0,a,i0,a)') 'item ', j, ' was done ', hits(j), ' times (want 1)'
          call bad(region, t, -1, -1, trim(what))
          return
       end if
    end do
    if (sum >= 0) then
       call report(region, t, -1, -1, sum)
    else
       call line(region, t, -1, -1)
       write (*, '(a)') ' ok'
    end if
  end subroutine report_hits
end program ompshim_f
