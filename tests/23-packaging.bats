#!/usr/bin/env bats
# 23-packaging: what an installing site gets (issue 16, deliver 6).
#   - the bash completion in a real bash: commands, options and policy names
#     as cosched itself lists them;
#   - `make install` into a scratch root: the docs every man page and --help
#     text points at, the completion where bash-completion looks, the Lmod
#     modulefile (run by lua5.4 with Lmod's functions recorded);
#   - the RPM spec as rpmspec parses it;
#   - the Debian packages: dpkg-buildpackage -b -us -uc from the release tree,
#     their contents and lintian (COSCHED_TEST_DEB=0 skips this one; it builds
#     cosched once more, about a minute and a half on 2 cores).

load helpers/common

setup() {
    requires cosched
    cd "$BATS_TEST_TMPDIR"
}

# complete WORDS...: what _cosched offers for the last word, one per line
complete_words() {
    PATH="$COSCHED_BUILDDIR:$PATH" COSCHED_DATADIR="$COSCHED_SRCDIR" bash --norc --noprofile -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _cosched
        printf "%s\n" "${COMPREPLY[@]}"' complete "$COSCHED_SRCDIR/share/completion/cosched" "$@"
}

@test "bash completion: commands, options and policies from cosched itself" {
    run complete_words cosched ''
    echo "$output"
    for c in run classify topology policies serve status simulate profiles report help; do
        echo "$output" | grep -qx "$c" || { echo "command $c not offered"; false; }
    done
    run complete_words cosched re
    assert_equal "$output" "report" "cosched re<TAB>"
    run complete_words cosched run --pol
    assert_equal "$(echo "$output" | sort | tr '\n' ' ')" "--policy --policy-opt --policy-path " "run --pol<TAB>"
    run complete_words cosched report --su
    assert_equal "$output" "--summary" "report --su<TAB>"
    # every policy `cosched policies` lists, and a site's own policy on COSCHED_POLICY_PATH
    mkdir pol
    printf 'return { api = 1, name = "zzsite", description = "mine", plan = function(snap) return {} end }\n' > pol/zzsite.lua
    run complete_words cosched run --policy ''
    for p in linux gang tft flca nmass dinuma; do
        echo "$output" | grep -qx "$p" || { echo "policy $p not offered: $output"; false; }
    done
    COSCHED_POLICY_PATH=$PWD/pol run complete_words cosched run --policy zz
    assert_equal "$output" "zzsite" "a site policy on COSCHED_POLICY_PATH"
    run complete_words cosched simulate --policy gang,fl
    echo "$output" | grep -qx "gang,flca" || { echo "simulate's policy list: $output"; false; }
    run complete_words cosched run --control c
    assert_equal "$(echo "$output" | sort | tr '\n' ' ')" "cgroup1 cgroup2 " "--control c<TAB>"
    # after --: the job's program (commands on PATH)
    run complete_words cosched run --policy gang -- bas
    echo "$output" | grep -qx bash || { echo "no command completion after --: $output"; false; }
    # report's trace and -o: files of the right kind
    touch a.jsonl b.txt c.svg
    run complete_words cosched report ''
    echo "$output" | grep -qx a.jsonl
    if echo "$output" | grep -qx b.txt; then echo "report <TAB> offers b.txt"; false; fi
    run complete_words cosched report a.jsonl -o ''
    echo "$output" | grep -qx c.svg
    if echo "$output" | grep -qx a.jsonl; then echo "report TRACE -o <TAB> offers a.jsonl"; false; fi
    run complete_words cosched help si
    assert_equal "$output" "simulate" "help si<TAB>"
    # short options, from the same --help lines: offered, and their values completed as the long forms'
    run complete_words cosched run -
    for o in -p -t -c -w -o -v -q -h --policy --jobs; do
        echo "$output" | grep -qx -- "$o" || { echo "run -<TAB>: $o not offered: $output"; false; }
    done
    if echo "$output" | grep -qx -- -j; then echo "run -<TAB> offers -j, which run does not take"; false; fi
    run complete_words cosched simulate -
    echo "$output" | grep -qx -- -w
    if echo "$output" | grep -qx -- -c; then echo "simulate -<TAB> offers -c, which simulate does not take"; false; fi
    run complete_words cosched -
    assert_equal "$(echo "$output" | LC_ALL=C sort | tr '\n' ' ')" "--help --version -V -h " "cosched -<TAB>"
    run complete_words cosched run -p fl
    echo "$output" | grep -qx flca || { echo "run -p fl<TAB>: $output"; false; }
    run complete_words cosched simulate -p gang,fl
    echo "$output" | grep -qx "gang,flca" || { echo "simulate -p gang,fl<TAB>: $output"; false; }
    run complete_words cosched run -o in
    assert_equal "$output" "inherit" "run -o in<TAB>"
    run complete_words cosched run -c nu
    assert_equal "$output" "numa:" "run -c nu<TAB>: a topology spec"
    run complete_words cosched topology --cpus c
    assert_equal "$output" "core:" "topology --cpus c<TAB>"
    run complete_words cosched run -c 0-
    assert_equal "$output" "" "run -c 0-<TAB>: a cpu list only the user knows"
    run complete_words cosched run -t ''
    assert_equal "$output" "" "run -t <TAB>: a duration only the user knows"
}

@test "make install: docs the man pages name, completion, modulefile, unit" {
    requires python3
    [ -f "$COSCHED_BUILDDIR/Makefile" ] || skip "needs a configured build tree"
    # the configured prefix: the modulefile and the unit carry it
    p=$(sed -n 's/^prefix = //p' "$COSCHED_BUILDDIR/Makefile")
    make -s -C "$COSCHED_BUILDDIR" install DESTDIR="$PWD/root" >install.log 2>&1 || { cat install.log; false; }
    doc=root$p/share/doc/cosched
    for f in README.md BENCHMARKS.md EVALUATION.md profiles/README.md sim/README.md; do
        [ -s "$doc/$f" ] || { echo "not installed: $doc/$f"; find root -name '*.md'; false; }
    done
    # every *.md a man page or a --help names is installed
    for f in $(grep -ohE '[A-Za-z/]*[A-Z]+\.md' "$COSCHED_SRCDIR"/share/man/*.[0-9] |
        sed -E 's#.*(profiles|sim)/README\.md$#\1/README.md#; s#^.*/([A-Z]+\.md)$#\1#' | sort -u); do
        [ -s "$doc/$f" ] || { echo "a man page names $f; $doc/$f is not installed"; false; }
    done
    "$COSCHED" profiles --help | grep -q "Format: .*/share/doc/cosched/profiles/README.md"
    # the demo folder README and cosched(1) EXAMPLES run in: the kernels and demo.jobs, every command it names beside it
    demo=root$p/libexec/cosched/demo
    [ -s "$demo/demo.jobs" ] || { echo "no demo.jobs beside the installed kernels:"; ls "$demo"; false; }
    for c in $(sed -n '/^[^#]/s/.* -- \([^ ]*\).*/\1/p' "$demo/demo.jobs"); do
        [ -x "$demo/$c" ] || { echo "demo.jobs names $c, not installed in $demo"; false; }
    done
    [ -s "root$p/share/bash-completion/completions/cosched" ]
    [ -s "root$p/lib/systemd/system/cosched-engine.service" ]
    mf=root$p/share/modulefiles/cosched/0.1.0.lua
    [ -s "$mf" ] || { find root -name '*.lua' -path '*modulefiles*'; false; }
    # Lmod runs a modulefile as Lua with its functions defined: record what it asks for
    MF=$mf run lua5.4 -e '
        local did = {}
        function whatis(s) end
        function help(s) assert(#s > 100, "help text") end
        function prepend_path(v, p) did[#did + 1] = v .. "=" .. p end
        function setenv(v, p) did[#did + 1] = v .. ":=" .. p end
        dofile(os.getenv("MF"))
        print(table.concat(did, " "))'
    echo "$output"
    [ "$status" -eq 0 ]
    assert_equal "$output" "PATH=$p/bin MANPATH=$p/share/man COSCHED_ROOT:=$p" "the modulefile's paths"
}

# issue 16 item 10: "the plugin path is written three different ways (man page, install, README)"
@test "the plugin's path: README, plugin/README and cosched-spank(8) give one plugstack.conf line, where the Debian package puts it" {
    local lines
    lines=$(grep -h '^ *optional .*cosched\.so' "$COSCHED_SRCDIR/README.md" "$COSCHED_SRCDIR/plugin/README" \
        "$COSCHED_SRCDIR/share/man/cosched-spank.8" | sed 's/\\-/-/g; s/^ *//' | sort | uniq -c)
    echo "$lines"
    [ "$(echo "$lines" | wc -l)" -eq 1 ] && [ "$(echo "$lines" | awk '{ print $1 }')" -eq 3 ] ||
        { echo "want one line, written the same in all three"; false; }
    path=$(echo "$lines" | awk '{ print $3 }')
    # debian/cosched-slurm.install's glob (its * the multiarch triplet), debian/rules' configure option
    glob=/$(grep 'cosched\.so$' "$COSCHED_SRCDIR/debian/cosched-slurm.install")
    [[ $path == $glob ]] || { echo "$path is not where debian/cosched-slurm.install puts the plugin ($glob)"; false; }
    grep -qx 'SLURM_PLUGINDIR = /usr/lib/$(DEB_HOST_MULTIARCH)/slurm-wlm' "$COSCHED_SRCDIR/debian/rules"
    [[ $path == /usr/lib/*/slurm-wlm/cosched.so ]]
}

@test "the RPM spec: rpmspec parses it, two packages, the plugin in cosched-slurm" {
    command -v rpmspec >/dev/null || skip "needs rpmspec (Debian package rpm; share/setup.sh installs it)"
    spec=$COSCHED_BUILDDIR/cosched.spec
    [ -f "$spec" ] || skip "needs a configured build tree (cosched.spec)"
    run rpmspec -P "$spec"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    echo "$output" | grep -q '^Version: *0\.1\.0$'
    echo "$output" | grep -q '^%files slurm$'
    echo "$output" | grep -q 'cosched\.so$'
    run rpmspec -q --qf '%{NAME}\n' "$spec"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    assert_equal "$(echo "$output" | grep -v '^warning' | sort | tr '\n' ' ')" "cosched cosched-slurm " "rpmspec -q"
}

@test "RPMs: rpmbuild -tb of the release tarball builds cosched and cosched-slurm (--nodeps: Debian has no RPM database)" {
    [ "${COSCHED_TEST_DEB:-1}" != 0 ] || skip "COSCHED_TEST_DEB=0"
    command -v rpmbuild >/dev/null || skip "needs rpmbuild (Debian package rpm)"
    [ -f "$COSCHED_BUILDDIR/Makefile" ] || skip "needs a configured build tree"
    make -s -C "$COSCHED_BUILDDIR" distdir distdir="$PWD/cosched-0.1.0" >dist.log 2>&1 || { cat dist.log; false; }
    tar -czf cosched-0.1.0.tar.gz cosched-0.1.0
    rpmbuild -tb --nodeps --define "_topdir $PWD/rpm" cosched-0.1.0.tar.gz >rpm.log 2>&1 || { tail -30 rpm.log; false; }
    r=$(echo rpm/RPMS/*/cosched-0.1.0-1.*.rpm) s=$(echo rpm/RPMS/*/cosched-slurm-0.1.0-1.*.rpm)
    [ -f "$r" ] && [ -f "$s" ] || { find rpm/RPMS; false; }
    rpm -qpl "$s" 2>/dev/null | grep -q '/slurm/cosched\.so$'
    rpm -qpl "$r" 2>/dev/null > files
    for f in /usr/bin/cosched /usr/share/bash-completion/completions/cosched /usr/share/doc/cosched/profiles/README.md \
        /usr/share/modulefiles/cosched/0.1.0.lua /etc/sysconfig/cosched-engine /usr/lib/systemd/system/cosched-engine.service; do
        grep -qx "$f" files || { echo "not in the cosched RPM: $f"; cat files; false; }
    done
    ! grep -q 'cosched\.so$' files
    assert_equal "$(rpm -qp --requires "$s" 2>/dev/null | grep -c '^slurm')" 1 "cosched-slurm requires slurm once"
}

@test "Debian packages: dpkg-buildpackage -b -us -uc builds cosched and cosched-slurm; lintian" {
    [ "${COSCHED_TEST_DEB:-1}" != 0 ] || skip "COSCHED_TEST_DEB=0"
    command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
        skip "needs dpkg-dev and debhelper (share/setup.sh installs them)"
    [ -f "$COSCHED_BUILDDIR/Makefile" ] || skip "needs a configured build tree"
    make -s -C "$COSCHED_BUILDDIR" distdir distdir="$PWD/cosched-0.1.0" >dist.log 2>&1 || { cat dist.log; false; }
    cd cosched-0.1.0
    dpkg-buildpackage -b -us -uc >../build.log 2>&1 || { tail -40 ../build.log; false; }
    cd ..
    arch=$(dpkg --print-architecture)
    for p in cosched cosched-slurm; do
        [ -s "${p}_0.1.0_$arch.deb" ] || { ls; false; }
    done
    dpkg-deb -c "cosched-slurm_0.1.0_$arch.deb" > slurm.contents
    grep -q "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm/cosched.so$" slurm.contents
    dpkg-deb -f "cosched-slurm_0.1.0_$arch.deb" Depends | grep -q 'slurm-client (>= 22.05)'
    dpkg-deb -c "cosched_0.1.0_$arch.deb" > contents
    for f in /usr/bin/cosched /usr/share/bash-completion/completions/cosched /usr/share/modulefiles/cosched/0.1.0.lua \
        /lib/systemd/system/cosched-engine.service /etc/default/cosched-engine \
        /usr/share/doc/cosched/profiles/README.md /usr/share/doc/cosched/sim/README.md /usr/share/man/man1/cosched.1.gz; do
        grep -q " \.$f\$" contents || { echo "not in cosched: $f"; cat contents; false; }
    done
    ! grep -q 'cosched\.so$' contents
    # the job file beside the demo kernels, not made executable by dh_fixperms
    grep -q '^-rw-r--r-- .* \./usr/libexec/cosched/demo/demo\.jobs$' contents ||
        { echo "demo.jobs:"; grep demo contents; false; }
    if command -v lintian >/dev/null; then
        # errors and warnings fail; none is overridden (debian/README.packaging: the informational tags left)
        run lintian --fail-on error,warning "cosched_0.1.0_${arch}.deb" "cosched-slurm_0.1.0_${arch}.deb"
        echo "$output"
        [ "$status" -eq 0 ]
    fi
}
