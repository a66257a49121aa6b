//! One control group per run: the kernel counts what a run holds — every process's memory,
//! kernel memory included (socket buffers, pipe buffers, page tables, the tmpfs pages it
//! writes), and its tasks — and bounds the whole run at once, where rlimits bound one process
//! at a time and count no kernel memory.
//!
//! ```text
//! <hierarchy>/<parent>/skillcat-<uid>/          made once; its controllers enabled (v2)
//!                       └── run-<pid>-<n>/       one run: memory.max (swap 0), pids.max, a CPU
//!                                                weight; the helper moves itself in first thing
//! ```
//!
//! **cgroup v2** is used where its hierarchy has the memory and pids controllers and a parent
//! this process may write: the nearest ancestor of its own cgroup (or the hierarchy's root)
//! whose `cgroup.subtree_control` has both — a root host's own hierarchy, or the subtree a
//! system delegates to a user (systemd's `user@UID.service`). **cgroup v1** (a host that still
//! mounts the memory and pids controllers as v1 hierarchies) is used the same way, under this
//! process's own cgroup in each. Where neither can be made, runs go without (each process is
//! still bounded by its rlimits) and [`status`] says why, so the host can say so once.
//!
//! A run's group is removed when the run ends, after anything left in it is killed (v2:
//! `cgroup.kill`; v1: every listed process, until none is left). A supervisor that was killed
//! leaves an empty group behind; [`Cgroups::clean_stale`] removes the groups of supervisors that are gone.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one run's group bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLimits {
    /// Bytes of memory of the whole run (`memory.max`; swap 0).
    pub memory: u64,
    /// Tasks of the whole run (`pids.max`).
    pub tasks: u64,
}

/// The relative CPU weight of a run: half the default (v2 `cpu.weight` 100, v1 `cpu.shares`
/// 1024), so a busy run yields to the host's own work.
const CPU_WEIGHT: u64 = 50;
const CPU_SHARES: u64 = 512;

/// The hierarchies this process puts runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// One unified hierarchy: the parent of the runs' groups.
    V2 { base: PathBuf },
    /// Per-controller hierarchies: the parents of the runs' groups in each.
    V1 {
        memory: PathBuf,
        pids: PathBuf,
        cpu: Option<PathBuf>,
    },
}

/// Where this process's runs get their groups, found once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroups {
    layout: Layout,
}

static DETECTED: OnceLock<Result<Cgroups, String>> = OnceLock::new();

/// The groups runs go in, or why there are none (found once per process).
pub fn status() -> Result<&'static Cgroups, &'static str> {
    DETECTED
        .get_or_init(|| detect(Path::new("/proc/self")))
        .as_ref()
        .map_err(String::as_str)
}

fn uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// One line of `/proc/self/mountinfo`: the mount point, the file-system type and its
/// super options.
fn mounts(proc_self: &Path) -> Vec<(PathBuf, String, String)> {
    let Ok(text) = std::fs::read_to_string(proc_self.join("mountinfo")) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        let mut r = right.split(' ');
        let (Some(fstype), Some(_source), Some(options)) = (r.next(), r.next(), r.next()) else {
            continue;
        };
        v.push((
            PathBuf::from(unescape_mount(point)),
            fstype.to_string(),
            options.to_string(),
        ));
    }
    v
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup per hierarchy, from `/proc/self/cgroup`: `(controllers, path)`
/// (controllers empty for v2).
fn own_groups(proc_self: &Path) -> Vec<(String, PathBuf)> {
    let Ok(text) = std::fs::read_to_string(proc_self.join("cgroup")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let (_id, ctl, path) = (it.next()?, it.next()?, it.next()?);
            Some((ctl.to_string(), PathBuf::from(path)))
        })
        .collect()
}

fn words(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Joins a `/proc/self/cgroup` path (absolute in the hierarchy) to a mount point.
fn under(mount: &Path, path: &Path) -> PathBuf {
    mount.join(path.strip_prefix("/").unwrap_or(path))
}

fn detect(proc_self: &Path) -> Result<Cgroups, String> {
    let mounts = mounts(proc_self);
    let own = own_groups(proc_self);
    let mut why = Vec::new();
    match detect_v2(&mounts, &own) {
        Ok(c) => return Ok(c),
        Err(e) => why.push(e),
    }
    match detect_v1(&mounts, &own) {
        Ok(c) => return Ok(c),
        Err(e) => why.push(e),
    }
    Err(why.join("; "))
}

fn detect_v2(
    mounts: &[(PathBuf, String, String)],
    own: &[(String, PathBuf)],
) -> Result<Cgroups, String> {
    let Some((mount, _, _)) = mounts.iter().find(|(_, t, _)| t == "cgroup2") else {
        return Err("no cgroup v2 hierarchy is mounted".into());
    };
    let controllers = words(&mount.join("cgroup.controllers"));
    if !["memory", "pids"]
        .iter()
        .all(|c| controllers.iter().any(|x| x == c))
    {
        return Err(format!(
            "the cgroup v2 hierarchy at {} has no memory and pids controllers (they are in \
             use by cgroup v1)",
            mount.display()
        ));
    }
    let Some((_, path)) = own.iter().find(|(c, _)| c.is_empty()) else {
        return Err("this process's cgroup v2 path is unknown".into());
    };
    // The nearest ancestor (never our own group, which holds processes and so can have no
    // controllers for children) whose children get memory and pids and that we may write.
    let mut candidates: Vec<PathBuf> = path.ancestors().skip(1).map(|a| under(mount, a)).collect();
    if candidates.is_empty() {
        // We are in the root group: it may hold processes and still give children controllers.
        candidates.push(mount.clone());
    }
    for parent in candidates {
        let control = words(&parent.join("cgroup.subtree_control"));
        let has = |c: &str| control.iter().any(|x| x == c);
        if !(has("memory") && has("pids")) {
            if parent == *mount && writable(&parent.join("cgroup.subtree_control")) {
                // The root's own controllers can be turned on for its children.
                if std::fs::write(parent.join("cgroup.subtree_control"), "+memory +pids").is_err() {
                    continue;
                }
            } else {
                continue;
            }
        }
        if !writable(&parent) || !writable(&parent.join("cgroup.procs")) {
            continue;
        }
        let base = parent.join(format!("skillcat-{}", uid()));
        if let Err(e) = std::fs::create_dir(&base)
            && e.kind() != io::ErrorKind::AlreadyExists
        {
            continue;
        }
        let enable = if words(&base.join("cgroup.controllers"))
            .iter()
            .any(|c| c == "cpu")
        {
            "+memory +pids +cpu"
        } else {
            "+memory +pids"
        };
        if std::fs::write(base.join("cgroup.subtree_control"), enable).is_err()
            && std::fs::write(base.join("cgroup.subtree_control"), "+memory +pids").is_err()
        {
            continue;
        }
        return Ok(Cgroups {
            layout: Layout::V2 { base },
        });
    }
    Err(format!(
        "no cgroup v2 group above {} gives its children the memory and pids controllers and \
         may be written by uid {}",
        path.display(),
        uid()
    ))
}

fn detect_v1(
    mounts: &[(PathBuf, String, String)],
    own: &[(String, PathBuf)],
) -> Result<Cgroups, String> {
    let hierarchy = |controller: &str| -> Option<PathBuf> {
        let (mount, _, _) = mounts
            .iter()
            .find(|(_, t, o)| t == "cgroup" && o.split(',').any(|x| x == controller))?;
        let (_, path) = own
            .iter()
            .find(|(c, _)| c.split(',').any(|x| x == controller))?;
        Some(under(mount, path))
    };
    let (Some(memory), Some(pids)) = (hierarchy("memory"), hierarchy("pids")) else {
        return Err("no cgroup v1 memory and pids hierarchies are mounted".into());
    };
    let base = |parent: PathBuf| -> Result<PathBuf, String> {
        let b = parent.join(format!("skillcat-{}", uid()));
        match std::fs::create_dir(&b) {
            Ok(()) => Ok(b),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(b),
            Err(e) => Err(format!("cannot make {}: {e}", b.display())),
        }
    };
    let memory = base(memory)?;
    let pids = base(pids)?;
    let cpu = hierarchy("cpu").and_then(|p| base(p).ok());
    Ok(Cgroups {
        layout: Layout::V1 { memory, pids, cpu },
    })
}

/// Which controllers a group directory is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The unified hierarchy: every controller.
    Unified,
    Memory,
    Pids,
    Cpu,
}

/// One run's group (its directory in each hierarchy).
#[derive(Debug)]
pub struct RunGroup {
    dirs: Vec<(Kind, PathBuf)>,
    v2: bool,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Cgroups {
    /// Makes a run's group with `limits`. Nothing is left behind on failure.
    pub fn create(&self, limits: GroupLimits) -> io::Result<RunGroup> {
        let name = format!(
            "run-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let group = match &self.layout {
            Layout::V2 { base } => RunGroup {
                dirs: vec![(Kind::Unified, base.join(&name))],
                v2: true,
            },
            Layout::V1 { memory, pids, cpu } => RunGroup {
                dirs: [
                    Some((Kind::Memory, memory)),
                    Some((Kind::Pids, pids)),
                    cpu.as_ref().map(|c| (Kind::Cpu, c)),
                ]
                .into_iter()
                .flatten()
                .map(|(k, b)| (k, b.join(&name)))
                .collect(),
                v2: false,
            },
        };
        let made = (|| {
            for (_, d) in &group.dirs {
                std::fs::create_dir(d)?;
            }
            group.limit(limits)
        })();
        match made {
            Ok(()) => Ok(group),
            Err(e) => {
                group.remove();
                Err(e)
            }
        }
    }

    /// Removes the groups of runs whose supervisor is gone (killed before it could), killing
    /// anything still in them.
    pub fn clean_stale(&self) {
        let bases: Vec<&PathBuf> = match &self.layout {
            Layout::V2 { base } => vec![base],
            Layout::V1 { memory, pids, cpu } => [Some(memory), Some(pids), cpu.as_ref()]
                .into_iter()
                .flatten()
                .collect(),
        };
        for base in bases {
            let Ok(rd) = std::fs::read_dir(base) else {
                continue;
            };
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name
                    .strip_prefix("run-")
                    .and_then(|r| r.split('-').next())
                    .and_then(|p| p.parse::<i32>().ok())
                else {
                    continue;
                };
                // SAFETY: signal 0 only checks that the pid exists.
                // A zombie has ended (only its parent's wait is left): its runs are over.
                let alive = pid == std::process::id() as i32
                    || (unsafe { libc::kill(pid, 0) } == 0
                        || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
                        && !zombie(pid);
                if !alive {
                    RunGroup {
                        dirs: vec![(Kind::Unified, e.path())],
                        v2: matches!(self.layout, Layout::V2 { .. }),
                    }
                    .remove();
                }
            }
        }
    }
}

/// Whether `pid` has exited and waits only to be reaped.
fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|close| stat[close + 1..].trim_start().chars().next())
            .is_some_and(|state| state == 'Z' || state == 'X')
    })
}

impl RunGroup {
    fn limit(&self, l: GroupLimits) -> io::Result<()> {
        let set = |dir: &Path, file: &str, value: String| {
            std::fs::write(dir.join(file), value)
                .map_err(|e| io::Error::new(e.kind(), format!("{}/{file}: {e}", dir.display())))
        };
        // A file the kernel has only with some option (swap accounting, the cpu controller)
        // is written where it is there.
        let optional = |dir: &Path, file: &str, value: String| {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(file))
                .and_then(|mut f| std::io::Write::write_all(&mut f, value.as_bytes()));
        };
        for (kind, d) in &self.dirs {
            match kind {
                Kind::Unified => {
                    set(d, "memory.max", l.memory.to_string())?;
                    // No swap: what a run holds stays what memory.max says (absent without swap).
                    optional(d, "memory.swap.max", "0".into());
                    // One group is one run: the OOM killer ends the whole run, not one process of it.
                    optional(d, "memory.oom.group", "1".into());
                    set(d, "pids.max", l.tasks.to_string())?;
                    optional(d, "cpu.weight", CPU_WEIGHT.to_string());
                }
                Kind::Memory => {
                    set(d, "memory.limit_in_bytes", l.memory.to_string())?;
                    // With swap accounting, memory + swap is bounded the same (no swap).
                    optional(d, "memory.memsw.limit_in_bytes", l.memory.to_string());
                    optional(d, "memory.swappiness", "0".into());
                }
                Kind::Pids => set(d, "pids.max", l.tasks.to_string())?,
                Kind::Cpu => optional(d, "cpu.shares", CPU_SHARES.to_string()),
            }
        }
        Ok(())
    }

    /// The files the helper writes itself into (every hierarchy's): v2's `cgroup.procs`; v1's
    /// `tasks`, which the single-threaded helper joins by writing `0` (itself). A v1 write to
    /// `cgroup.procs` moves a whole thread group under the kernel's global
    /// `cgroup_threadgroup_rwsem`, whose write side waits for an RCU grace period (6–15 ms
    /// here); moving the calling thread alone skips that lock (about 0.1 ms).
    pub fn join_files(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .map(|(_, d)| d.join(if self.v2 { "cgroup.procs" } else { "tasks" }))
            .collect()
    }

    /// Whether the kernel killed a process of the run for reaching its memory limit.
    pub fn out_of_memory(&self) -> bool {
        self.dirs.iter().any(|(kind, d)| {
            // Only a memory controller counts OOM kills: v2's `memory.events`, v1's
            // `memory.oom_control` (both with an `oom_kill N` line).
            let file = match kind {
                Kind::Unified => "memory.events",
                Kind::Memory => "memory.oom_control",
                Kind::Pids | Kind::Cpu => return false,
            };
            std::fs::read_to_string(d.join(file)).is_ok_and(|text| {
                text.lines().any(|l| {
                    l.strip_prefix("oom_kill")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .is_some_and(|n| n > 0)
                })
            })
        })
    }

    /// Kills everything left in the group and removes it (best effort: a group that stays
    /// busy is left for [`Cgroups::clean_stale`]). Dropping the group does the same, so a run
    /// whose future is dropped midway (an MCP client gone) leaves no group behind.
    pub fn remove(mut self) {
        self.clean();
    }

    fn clean(&mut self) {
        let dirs = std::mem::take(&mut self.dirs);
        let deadline = Instant::now() + Duration::from_secs(2);
        for (_, d) in &dirs {
            if !d.exists() {
                continue;
            }
            if self.v2 {
                let _ = std::fs::write(d.join("cgroup.kill"), "1");
            }
            loop {
                if !self.v2 {
                    for pid in words(&d.join("cgroup.procs")) {
                        if let Ok(pid) = pid.parse::<i32>() {
                            // SAFETY: killing a process of this run's group.
                            unsafe { libc::kill(pid, libc::SIGKILL) };
                        }
                    }
                }
                match std::fs::remove_dir(d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(_) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(_) => break,
                }
            }
        }
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        self.clean();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_and_cgroup_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mountinfo"),
            "30 23 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n\
             35 23 0:31 / /sys/fs/cgroup/un\\040ified rw - cgroup2 cgroup2 rw\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("cgroup"),
            "4:memory:/a/b\n8:pids:/\n0::/user.slice/x.scope\n",
        )
        .unwrap();
        let m = mounts(dir.path());
        assert_eq!(m[0].0, PathBuf::from("/sys/fs/cgroup/memory"));
        assert_eq!(m[0].1, "cgroup");
        assert!(m[0].2.split(',').any(|o| o == "memory"));
        assert_eq!(m[1].0, PathBuf::from("/sys/fs/cgroup/un ified"));
        assert_eq!(m[1].1, "cgroup2");
        let own = own_groups(dir.path());
        assert_eq!(own[0], ("memory".into(), PathBuf::from("/a/b")));
        assert_eq!(
            own[2],
            (String::new(), PathBuf::from("/user.slice/x.scope"))
        );
        assert_eq!(
            under(Path::new("/sys/fs/cgroup/memory"), Path::new("/a/b")),
            PathBuf::from("/sys/fs/cgroup/memory/a/b")
        );
    }

    #[test]
    fn a_host_without_cgroups_says_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mountinfo"),
            "22 1 8:1 / / rw - ext4 /dev/vda rw\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("cgroup"), "0::/\n").unwrap();
        let why = detect(dir.path()).unwrap_err();
        assert!(why.contains("no cgroup v2 hierarchy is mounted"), "{why}");
        assert!(why.contains("no cgroup v1 memory and pids"), "{why}");
    }

    #[test]
    fn the_warning_says_what_is_not_bounded() {
        let w = crate::script::NoCgroup::Unavailable("no cgroup v2 hierarchy is mounted".into())
            .to_string();
        assert!(w.contains("no cgroup v2 hierarchy is mounted"));
        assert!(w.contains("kernel memory"));
    }
}
