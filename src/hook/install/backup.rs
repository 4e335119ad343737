//! The user's original of a file install edited, kept in filewatchd's state directory (the
//! workspace's for a project file, the state home's for a user file), never beside the file:
//! a backup in the repository would be committed or left behind.

use crate::platform::ext::{DirExt, OpenExt};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Earlier versions wrote `<file>.filewatchd-backup` next to the file.
fn legacy_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".filewatchd-backup");
    PathBuf::from(name)
}

/// `<dir>/<file name>-<short hash of the file's full path>`: one backup per edited file.
pub fn backup_path(dir: &Path, path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "settings".to_string(), |n| n.to_string_lossy().into_owned());
    let hash = blake3::hash(path.as_os_str().as_encoded_bytes());
    dir.join(format!("{name}-{}", &hash.to_hex()[..12]))
}

/// The saved original of `path`, if there is one (a legacy backup beside the file counts).
pub fn read(dir: &Path, path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match super::read_optional(&backup_path(dir, path))? {
        Some(bytes) => Ok(Some(bytes)),
        None => super::read_optional(&legacy_path(path)),
    }
}

/// Saves `original` as the backup of `path` (0600 in a 0700 directory: settings files can
/// hold secrets), and drops a legacy backup beside the file.
pub fn save(dir: &Path, path: &Path, original: &[u8]) -> anyhow::Result<PathBuf> {
    let backup = backup_path(dir, path);
    save_bytes(dir, &backup, original)?;
    remove(&legacy_path(path))?;
    Ok(backup)
}

/// Writes `bytes` to `backup` in `dir` durably (temp, sync, rename).
fn save_bytes(dir: &Path, backup: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .permission_bits(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp_name = backup.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .permission_bits(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, backup).with_context(|| format!("cannot write {}", backup.display()))
}

/// Moves a legacy backup beside the file into the state directory, if there is one.
pub fn adopt_legacy(dir: &Path, path: &Path) -> anyhow::Result<()> {
    let legacy = legacy_path(path);
    match super::read_optional(&legacy)? {
        Some(original) if !backup_path(dir, path).exists() => save(dir, path, &original).map(drop),
        Some(_) => remove(&legacy),
        None => Ok(()),
    }
}

/// Forgets the backup of `path` (uninstall is done with it), the legacy one too, and the
/// mark that install added to it.
pub fn discard(dir: &Path, path: &Path) -> anyhow::Result<()> {
    remove(&backup_path(dir, path))?;
    remove(&mark_path(dir, path))?;
    remove(&legacy_path(path))
}

/// `<backup>.added`: install added its entry to `path` (uninstall takes out only such).
fn mark_path(dir: &Path, path: &Path) -> PathBuf {
    let mut name = backup_path(dir, path).into_os_string();
    name.push(".added");
    PathBuf::from(name)
}

/// Notes that install added its entry to `path`.
pub fn mark(dir: &Path, path: &Path) -> anyhow::Result<()> {
    save_bytes(dir, &mark_path(dir, path), b"")
}

/// Whether install added its entry to `path` (and no uninstall took it out since).
pub fn is_marked(dir: &Path, path: &Path) -> bool {
    mark_path(dir, path).is_file()
}

fn remove(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}
