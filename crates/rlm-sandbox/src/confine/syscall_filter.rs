//! seccomp: a deny-list of system calls the interpreter never needs and an attacker would want.
//!
//! A precise allow-list would follow every change of Monty, the Rust standard library and libc;
//! a deny-list of what opens the way out (network, exec, other processes, namespaces, kernel
//! attack surface) does not. Denied calls fail with `EPERM` (`clone3` with `ENOSYS`, so that a
//! thread library falls back to `clone`, whose namespace flags are checked).

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) use self::linux::restrict;

/// Architectures without a filter here report it as missing.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn restrict() -> Result<String, String> {
    Err(format!(
        "no seccomp filter is defined for the {} architecture",
        std::env::consts::ARCH
    ))
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod linux {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    /// Denied outright, whatever the arguments.
    const DENIED: &[i64] = &[
        // Network and IPC endpoints: the worker talks only over the pipes it was started with.
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        // Running programs.
        libc::SYS_execve,
        libc::SYS_execveat,
        // Other processes' memory and file descriptors.
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_process_madvise,
        libc::SYS_pidfd_getfd,
        libc::SYS_pidfd_send_signal,
        libc::SYS_tkill,
        libc::SYS_kcmp,
        // Namespaces and mounts.
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_mount_setattr,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        // File handles bypass path checks; truncate(2) by path predates Landlock ABI 3.
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_truncate,
        libc::SYS_fanotify_init,
        // Kernel attack surface no Python code needs.
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_userfaultfd,
        libc::SYS_kexec_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_quotactl,
    ];

    /// `clone` flags that create namespaces.
    const NAMESPACE_FLAGS: &[libc::c_int] = &[
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ];

    /// Installs the filters on every thread of the process (there is one at this point).
    pub(in crate::confine) fn restrict() -> Result<String, String> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|error| format!("seccomp: {error}"))?;
        let denied = deny_list()?;
        let denied_count = denied.len() + 1;
        let mut programs = vec![
            program(denied, libc::EPERM, arch)?,
            program(
                BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
                libc::ENOSYS,
                arch,
            )?,
        ];
        #[cfg(target_arch = "x86_64")]
        programs.push(x32_guard());
        for program in &programs {
            seccompiler::apply_filter_all_threads(program).map_err(|error| {
                format!("seccomp filters are not available on this kernel ({error})")
            })?;
        }
        Ok(format!(
            "seccomp filter ({denied_count} system calls denied or limited)"
        ))
    }

    fn deny_list() -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|&number| (number, Vec::new())).collect();
        let own = u64::from(std::process::id());
        // Signals, queued signals and resource limits only for the worker itself: `kill(0, ...)`
        // or `kill(host_pid, ...)` would otherwise reach the host on kernels before Landlock ABI 6.
        for number in [
            libc::SYS_kill,
            libc::SYS_tgkill,
            libc::SYS_rt_sigqueueinfo,
            libc::SYS_rt_tgsigqueueinfo,
        ] {
            rules.insert(
                number,
                vec![rule(vec![argument(0, SeccompCmpOp::Ne, own)?])?],
            );
        }
        rules.insert(
            libc::SYS_prlimit64,
            vec![rule(vec![
                argument(0, SeccompCmpOp::Ne, 0)?,
                argument(0, SeccompCmpOp::Ne, own)?,
            ])?],
        );
        let namespace_rules = NAMESPACE_FLAGS
            .iter()
            .map(|&flag| {
                let flag = u64::try_from(flag).unwrap_or(u64::MAX);
                rule(vec![argument(0, SeccompCmpOp::MaskedEq(flag), flag)?])
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_clone, namespace_rules);
        Ok(rules)
    }

    /// A condition on the low 32 bits of an argument (pids and clone flags are 32-bit).
    fn argument(
        index: u8,
        operation: SeccompCmpOp,
        value: u64,
    ) -> Result<SeccompCondition, String> {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, operation, value)
            .map_err(|error| format!("seccomp: {error}"))
    }

    /// All conditions must hold.
    fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
        SeccompRule::new(conditions).map_err(|error| format!("seccomp: {error}"))
    }

    /// Matching calls fail with `errno`; everything else is allowed. Another architecture's
    /// calling convention (e.g. 32-bit `int 0x80` on x86_64) kills the process.
    fn program(
        rules: BTreeMap<i64, Vec<SeccompRule>>,
        errno: libc::c_int,
        arch: TargetArch,
    ) -> Result<BpfProgram, String> {
        let errno = u32::try_from(errno).unwrap_or(1);
        SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno),
            arch,
        )
        .and_then(BpfProgram::try_from)
        .map_err(|error| format!("seccomp: {error}"))
    }

    /// x32 system calls share the x86_64 audit architecture and differ only by bit 30 of the
    /// call number, which the deny-list (exact numbers) would not catch: refuse them all.
    #[cfg(target_arch = "x86_64")]
    fn x32_guard() -> BpfProgram {
        use seccompiler::sock_filter;
        const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
        const JUMP_EQUAL: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
        const JUMP_GREATER_EQUAL: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
        const RETURN: u16 = 0x06; // BPF_RET | BPF_K
        const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        const OFFSET_NR: u32 = 0; // struct seccomp_data { int nr; __u32 arch; ... }
        const OFFSET_ARCH: u32 = 4;
        let instruction = |code, jt, jf, k| sock_filter { code, jt, jf, k };
        vec![
            instruction(LOAD_WORD, 0, 0, OFFSET_ARCH),
            // Another architecture: allow here, the deny-list filter kills it.
            instruction(JUMP_EQUAL, 0, 3, AUDIT_ARCH_X86_64),
            instruction(LOAD_WORD, 0, 0, OFFSET_NR),
            instruction(JUMP_GREATER_EQUAL, 0, 1, X32_SYSCALL_BIT),
            instruction(
                RETURN,
                0,
                0,
                libc::SECCOMP_RET_ERRNO | libc::EPERM.unsigned_abs(),
            ),
            instruction(RETURN, 0, 0, libc::SECCOMP_RET_ALLOW),
        ]
    }
}
