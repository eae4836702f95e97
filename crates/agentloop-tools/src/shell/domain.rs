//! The Landlock domain the command lives in: reads (and execution) only
//! below the read list, writes only below the write list, and no signals
//! to or abstract sockets of processes outside. The launcher builds it
//! once to fail early, typed; PID 1 enters it.

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

use super::protocol::{LaunchSpec, SandboxError};

/// The Landlock ruleset, made but not enforced. Filesystem rights of ABI 3
/// (with `refer` and `truncate`) are required; the ABI 6 scopes (signals,
/// abstract Unix sockets) are added when the kernel has them.
pub(super) fn landlock_ruleset(
    spec: &LaunchSpec,
) -> Result<landlock::RulesetCreated, SandboxError> {
    let landlock = |e: &dyn std::fmt::Display| SandboxError::Landlock {
        message: e.to_string(),
    };
    let fs_abi = ABI::V3;
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(fs_abi))
        .map_err(|e| landlock(&e))?
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::from_all(ABI::V6))
        .map_err(|e| landlock(&e))?
        .create()
        .map_err(|e| landlock(&e))?
        .add_rules(path_beneath_rules(&spec.read, AccessFs::from_read(fs_abi)))
        .map_err(|e| landlock(&e))?
        .add_rules(path_beneath_rules(&spec.write, AccessFs::from_all(fs_abi)))
        .map_err(|e| landlock(&e))
}

/// Puts this process (PID 1, before it starts the command) in the Landlock
/// domain: reads only below the read list, writes only below the write
/// list, no signals to and no abstract sockets of processes outside.
pub(super) fn landlock_rules(spec: &LaunchSpec) -> Result<(), SandboxError> {
    let status = landlock_ruleset(spec)?
        .restrict_self()
        .map_err(|e| SandboxError::Landlock {
            message: e.to_string(),
        })?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Landlock {
            message: "the kernel does not enforce the ruleset".to_owned(),
        });
    }
    Ok(())
}
