//! The Landlock ruleset of a run, built before the fork and enforced in the child.
//!
//! File-system rights are handled at the kernel's ABI capped at V5 (the tested set: V1 base,
//! V2 Refer, V3 Truncate, V5 IoctlDev) as a **hard requirement**: every right asked for is
//! enforced or the build fails. TCP bind/connect (ABI 4) are handled, with no port allowed, when
//! the network is off; abstract UNIX sockets and signals are scoped to the sandbox (ABI 6).
//! Rules open each path now (`O_PATH`), so they bind inodes: a later symlink swap cannot widen
//! them. A path the supervisor checked (the skill, the work directory, every granted path)
//! carries the device and inode it found there: it is opened without following any symbolic
//! link and must be that same inode, so a swap between the check and this open is refused. A required path that cannot be opened is an error, never silently skipped.

use std::os::unix::io::{AsFd, AsRawFd, OwnedFd};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetStatus, Scope,
};

use crate::script::sandbox::{FsAccess, FsRule, HelperPolicy, NetMode};

/// A ruleset ready to enforce, and what it covers.
pub(super) struct Prepared {
    ruleset: Option<RulesetCreated>,
    abi: ABI,
    summary: String,
}

fn fs_abi(kernel: u32) -> ABI {
    match kernel {
        0 | 1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        _ => ABI::V5,
    }
}

/// Rights beneath a read+execute rule.
fn read_exec(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_read(abi)
}

/// Rights beneath a read+write rule: everything but execute, device nodes and device ioctls.
fn read_write(abi: ABI) -> BitFlags<AccessFs> {
    let mut a = AccessFs::from_all(abi);
    a.remove(AccessFs::Execute | AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev);
    a
}

/// Builds the ruleset for `policy` on a kernel with Landlock ABI `kernel_abi`.
pub(super) fn build(policy: &HelperPolicy, kernel_abi: u32) -> Result<Prepared, String> {
    let abi = fs_abi(kernel_abi);
    let tcp = policy.network != NetMode::All && kernel_abi >= 4;
    let scopes = kernel_abi >= 6;
    let e = |e: landlock::RulesetError| e.to_string();
    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(e)?;
    if tcp {
        rs = rs.handle_access(AccessNet::from_all(ABI::V4)).map_err(e)?;
    }
    if scopes {
        rs = rs.scope(Scope::from_all(ABI::V6)).map_err(e)?;
    }
    let mut created = rs.create().map_err(e)?;
    for rule in &policy.rules {
        created = add_rule(created, abi, rule)?;
    }
    if tcp && policy.network == NetMode::Proxied {
        // The proxy's port is the one TCP connection a proxied script may make (no bind).
        created = created
            .add_rule(NetPort::new(
                crate::script::sandbox::PROXY_PORT,
                AccessNet::ConnectTcp,
            ))
            .map_err(e)?;
    }
    let summary = format!(
        "landlock (kernel ABI {kernel_abi}, file system at ABI {}, TCP {}, scopes {})",
        abi as u32,
        match (policy.network, tcp) {
            (NetMode::All, _) => "allowed",
            (NetMode::Proxied, true) => "to the proxy's port only",
            (NetMode::Off, true) => "denied",
            (_, false) => "not handled by this kernel",
        },
        if scopes { "on" } else { "unavailable" },
    );
    Ok(Prepared {
        ruleset: Some(created),
        abi,
        summary,
    })
}

/// Opens `rule`'s path and adds its rule (a missing optional path adds nothing).
fn add_rule(created: RulesetCreated, abi: ABI, rule: &FsRule) -> Result<RulesetCreated, String> {
    let fd: OwnedFd = match rule.inode {
        // A checked path: reached without following links, and the very inode checked.
        Some(want) => {
            let fd = super::open_no_symlinks(&rule.path)
                .map_err(|err| format!("{}: {err}", rule.path.display()))?;
            let got =
                super::identity(&fd).map_err(|err| format!("{}: {err}", rule.path.display()))?;
            if got != want {
                return Err(format!(
                    "{}: not the file that was checked (it was replaced since)",
                    rule.path.display()
                ));
            }
            fd
        }
        None => match PathFd::new(&rule.path) {
            Ok(fd) => fd
                .as_fd()
                .try_clone_to_owned()
                .map_err(|err| format!("{}: {err}", rule.path.display()))?,
            Err(_) if !rule.required => return Ok(created),
            Err(err) => return Err(format!("{}: {err}", rule.path.display())),
        },
    };
    let want = match rule.access {
        FsAccess::ReadExec => read_exec(abi),
        FsAccess::ReadWrite => read_write(abi),
    };
    let access = if is_dir(&fd) {
        want
    } else {
        want & AccessFs::from_file(abi)
    };
    if access.is_empty() {
        return Ok(created);
    }
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|err| format!("{}: {err}", rule.path.display()))
}

fn is_dir(fd: &OwnedFd) -> bool {
    // SAFETY: fstat on a live fd into a zeroed local.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_fd().as_raw_fd(), &mut st) == 0
            && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
    }
}

impl Prepared {
    /// Adds one more rule, opening its path now (after the helper joined a workspace's mount
    /// namespace, a path resolves in it).
    pub(super) fn add(&mut self, rule: &FsRule) -> Result<(), String> {
        let created = self.ruleset.take().ok_or("the ruleset was already used")?;
        self.ruleset = Some(add_rule(created, self.abi, rule)?);
        Ok(())
    }

    /// Enforces the ruleset on the calling thread (and sets no_new_privs). Anything short of
    /// full enforcement is an error.
    pub(super) fn restrict(&mut self) -> Result<String, String> {
        let ruleset = self.ruleset.take().ok_or("the ruleset was already used")?;
        let status: RestrictionStatus = ruleset.restrict_self().map_err(|e| e.to_string())?;
        match status.ruleset {
            RulesetStatus::FullyEnforced => Ok(std::mem::take(&mut self.summary)),
            RulesetStatus::PartiallyEnforced => {
                Err("the ruleset is only partially enforced".into())
            }
            RulesetStatus::NotEnforced => Err("the ruleset is not enforced".into()),
        }
    }
}
