//! The seccomp filters the command runs under: a guard that lets only the
//! native system call ABI through, the deny list, and `clone3` turned
//! into `ENOSYS`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::protocol::SandboxError;

/// System calls the command may not make (they fail with `EPERM`):
/// debugging other processes, mounting, the kernel keyring, BPF,
/// performance counters, kernel modules and kexec, leaving or making
/// namespaces, userfaultfd, handle-based opens that bypass paths, and
/// system administration, io_uring. `clone` with a namespace flag is
/// refused too, and so is `socket(AF_UNIX, …)` (named Unix sockets are
/// reached by path and Landlock up to ABI 7 does not check that;
/// `socketpair` stays allowed); the `chmod` family and file creation with
/// a setuid or setgid bit in the mode (see [`MODE_ARGUMENT`]); `openat2`,
/// whose mode the filter cannot read, fails with `ENOSYS` so libc uses
/// `openat`; `fallocate` fails with `EOPNOTSUPP` (blocks are reserved
/// only by writing, which the write quota sees; glibc's
/// `posix_fallocate` writes instead); `clone3` fails with `ENOSYS` so
/// libc falls back to `clone`, whose flags a filter can read.
pub const DENIED: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("syslog", libc::SYS_syslog),
    ("vhangup", libc::SYS_vhangup),
    // io_uring runs operations (sockets, opens) the filter never sees.
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

/// Calls that set a file's mode, with the index of their mode argument:
/// refused when the mode holds `S_ISUID` or `S_ISGID`, so no setuid or
/// setgid file is left for anyone to run outside the sandbox.
pub const MODE_ARGUMENT: &[(&str, i64, u8)] = &[
    ("fchmod", libc::SYS_fchmod, 1),
    ("fchmodat", libc::SYS_fchmodat, 2),
    ("fchmodat2", libc::SYS_fchmodat2, 2),
    ("openat", libc::SYS_openat, 3),
    ("mknodat", libc::SYS_mknodat, 2),
    #[cfg(target_arch = "x86_64")]
    ("chmod", libc::SYS_chmod, 1),
    #[cfg(target_arch = "x86_64")]
    ("open", libc::SYS_open, 2),
    #[cfg(target_arch = "x86_64")]
    ("creat", libc::SYS_creat, 1),
    #[cfg(target_arch = "x86_64")]
    ("mknod", libc::SYS_mknod, 1),
];

/// Namespace flags `clone` may not carry.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// The bit that marks an x32 system call number on x86_64.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `offsetof(struct seccomp_data, nr)` and `…, arch)`.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;

fn failed(e: &dyn std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp {
        message: e.to_string(),
    }
}

/// The filters, in the order they are applied. The kernel runs every one
/// and keeps the strictest answer.
pub(super) fn filters() -> Result<Vec<BpfProgram>, SandboxError> {
    let arch: TargetArch = std::env::consts::ARCH.try_into().map_err(|e| failed(&e))?;
    let native = audit_arch(arch);
    let errno = |code: i32| SeccompAction::Errno(code as u32);
    let refused = |rules: BTreeMap<i64, Vec<SeccompRule>>, action| -> Result<BpfProgram, _> {
        SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
            .and_then(TryInto::try_into)
            .map_err(|e| failed(&e))
    };
    let only = |number: i64| BTreeMap::from([(number, Vec::new())]);
    Ok(vec![
        guard(native),
        refused(denied_rules()?, errno(libc::EPERM))?,
        refused(only(libc::SYS_clone3), errno(libc::ENOSYS))?,
        refused(only(libc::SYS_openat2), errno(libc::ENOSYS))?,
        refused(only(libc::SYS_fallocate), errno(libc::EOPNOTSUPP))?,
    ])
}

/// Applies every filter to this process (and so to what it executes).
pub(super) fn apply() -> Result<(), SandboxError> {
    for filter in filters()? {
        seccompiler::apply_filter(&filter).map_err(|e| failed(&e))?;
    }
    Ok(())
}

/// `AUDIT_ARCH_*` of the native architecture.
fn audit_arch(arch: TargetArch) -> u32 {
    const LE_64: u32 = 0x8000_0000 | 0x4000_0000;
    match arch {
        TargetArch::x86_64 => 62 | LE_64,
        TargetArch::aarch64 => 183 | LE_64,
        TargetArch::riscv64 => 243 | LE_64,
    }
}

/// Kills the process on any architecture but the native one (a 32-bit
/// `int 0x80` call on x86_64, say) and refuses x32 system call numbers,
/// which would otherwise name every call the deny list names under
/// another number.
fn guard(native: u32) -> BpfProgram {
    // BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JSET|BPF_K,
    // BPF_RET|BPF_K.
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LD_W_ABS, 0, 0, DATA_ARCH),
        op(JEQ_K, 1, 0, native),
        op(RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
        op(LD_W_ABS, 0, 0, DATA_NR),
        op(JSET_K, 0, 1, X32_SYSCALL_BIT),
        op(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

fn denied_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, SandboxError> {
    let condition = |arg, len, op, value| SeccompCondition::new(arg, len, op, value);
    let rule = |conditions| SeccompRule::new(conditions).map_err(|e| failed(&e));
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
        .iter()
        .map(|(_, number)| (*number, Vec::new()))
        .collect();
    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = *flag as u64;
        let c = condition(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(|e| failed(&e))?;
        clone_rules.push(rule(vec![c])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    for (_, number, arg) in MODE_ARGUMENT {
        let mut mode_rules = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            let c = condition(
                *arg,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )
            .map_err(|e| failed(&e))?;
            mode_rules.push(rule(vec![c])?);
        }
        rules.insert(*number, mode_rules);
    }
    // Named Unix sockets are reached by path, which Landlock (up to ABI 7)
    // does not check on connect: a database's or container engine's socket
    // would be an open door. Socket pairs (`socketpair`) stay allowed.
    let unix = condition(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| failed(&e))?;
    rules.insert(libc::SYS_socket, vec![rule(vec![unix])?]);
    // Pushing bytes into a terminal's input is refused. (The constant's
    // type differs between targets.)
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = condition(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::TIOCSTI as u64,
    )
    .map_err(|e| failed(&e))?;
    rules.insert(libc::SYS_ioctl, vec![rule(vec![tiocsti])?]);
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel hands a filter.
    struct Call {
        arch: u32,
        nr: u32,
        args: [u64; 6],
    }

    impl Call {
        fn native(nr: i64, args: &[u64]) -> Self {
            let mut all = [0u64; 6];
            all[..args.len()].copy_from_slice(args);
            Self {
                arch: audit_arch(std::env::consts::ARCH.try_into().unwrap()),
                nr: nr as u32,
                args: all,
            }
        }

        /// The 32-bit word at `offset` of `struct seccomp_data`.
        fn word(&self, offset: u32) -> u32 {
            match offset {
                0 => self.nr,
                4 => self.arch,
                8..=15 => 0, // instruction pointer
                16..=63 => {
                    let arg = self.args[((offset - 16) / 8) as usize];
                    if (offset - 16).is_multiple_of(8) {
                        arg as u32
                    } else {
                        (arg >> 32) as u32
                    }
                }
                other => panic!("load past seccomp_data at {other}"),
            }
        }
    }

    /// A classic BPF interpreter for what seccomp filters use.
    fn run(program: &[sock_filter], call: &Call) -> u32 {
        let (mut a, mut x, mut mem) = (0u32, 0u32, [0u32; 16]);
        let mut pc = 0usize;
        loop {
            let i = program.get(pc).unwrap_or_else(|| panic!("ran off at {pc}"));
            pc += 1;
            let src = if i.code & 0x08 != 0 { x } else { i.k };
            match i.code & 0x07 {
                0x00 => match i.code {
                    0x20 => a = call.word(i.k),
                    0x00 => a = i.k,
                    0x60 => a = mem[i.k as usize],
                    other => panic!("load {other:#x}"),
                },
                0x01 => match i.code {
                    0x01 => x = i.k,
                    0x61 => x = mem[i.k as usize],
                    other => panic!("loadx {other:#x}"),
                },
                0x02 => mem[i.k as usize] = a,
                0x03 => mem[i.k as usize] = x,
                0x04 => {
                    a = match i.code & 0xf0 {
                        0x00 => a.wrapping_add(src),
                        0x10 => a.wrapping_sub(src),
                        0x20 => a.wrapping_mul(src),
                        0x40 => a | src,
                        0x50 => a & src,
                        0x60 => a << src,
                        0x70 => a >> src,
                        0x80 => a.wrapping_neg(),
                        0xa0 => a ^ src,
                        other => panic!("alu {other:#x}"),
                    }
                }
                0x05 => {
                    let taken = match i.code & 0xf0 {
                        0x00 => {
                            pc += i.k as usize;
                            continue;
                        }
                        0x10 => a == src,
                        0x20 => a > src,
                        0x30 => a >= src,
                        0x40 => a & src != 0,
                        other => panic!("jump {other:#x}"),
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                0x06 => return if i.code & 0x18 == 0x10 { a } else { i.k },
                0x07 => {
                    if i.code & 0xf8 == 0x00 {
                        x = a
                    } else {
                        a = x
                    }
                }
                _ => unreachable!(),
            }
        }
    }

    /// The kernel's answer: the strictest of every filter's.
    fn verdict(call: &Call) -> u32 {
        filters()
            .unwrap()
            .iter()
            .map(|p| run(p, call))
            .min_by_key(|action| (action & 0xffff_0000) as i32)
            .unwrap()
    }

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
    fn errno(code: i32) -> u32 {
        libc::SECCOMP_RET_ERRNO | code as u32
    }

    #[test]
    fn ordinary_calls_pass_and_denied_ones_fail_with_their_errno() {
        assert_eq!(verdict(&Call::native(libc::SYS_read, &[0])), ALLOW);
        assert_eq!(
            verdict(&Call::native(libc::SYS_ptrace, &[])),
            errno(libc::EPERM)
        );
        assert_eq!(
            verdict(&Call::native(libc::SYS_clone3, &[])),
            errno(libc::ENOSYS)
        );
        assert_eq!(
            verdict(&Call::native(libc::SYS_openat2, &[])),
            errno(libc::ENOSYS)
        );
        assert_eq!(
            verdict(&Call::native(libc::SYS_fallocate, &[3, 0, 0, 1 << 30])),
            errno(libc::EOPNOTSUPP)
        );
        let unshare_flags = libc::CLONE_NEWUSER as u64;
        assert_eq!(
            verdict(&Call::native(libc::SYS_clone, &[unshare_flags])),
            errno(libc::EPERM)
        );
        assert_eq!(verdict(&Call::native(libc::SYS_clone, &[0x11])), ALLOW);
    }

    #[test]
    fn a_mode_with_setuid_or_setgid_is_refused_and_others_pass() {
        for (name, number, arg) in MODE_ARGUMENT {
            let with = |mode: u64| {
                let mut args = [0u64; 6];
                args[*arg as usize] = mode;
                verdict(&Call::native(*number, &args))
            };
            assert_eq!(with(0o755), ALLOW, "{name} 0755");
            assert_eq!(with(0o4755), errno(libc::EPERM), "{name} 04755");
            assert_eq!(with(0o2755), errno(libc::EPERM), "{name} 02755");
            assert_eq!(with(0o6777), errno(libc::EPERM), "{name} 06777");
        }
    }

    #[test]
    fn x32_numbers_and_foreign_architectures_are_refused() {
        for number in [libc::SYS_read, libc::SYS_ptrace, libc::SYS_mount] {
            let mut call = Call::native(number, &[]);
            call.nr |= X32_SYSCALL_BIT;
            assert_eq!(verdict(&call), errno(libc::ENOSYS), "x32 {number}");
        }
        // i386 (`int 0x80` from a 64-bit process) and a big-endian ABI.
        for arch in [0x4000_0003, 0x8000_0016] {
            let mut call = Call::native(libc::SYS_read, &[]);
            call.arch = arch;
            assert_eq!(verdict(&call), KILL, "arch {arch:#x}");
        }
    }
}
