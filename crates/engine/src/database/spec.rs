//! File specifications (`NAME`, `FILENAME`, `SIZE`, `MAXSIZE`, `FILEGROWTH`) and their
//! validation with SQL Server's errors (reference §3.2–§3.3). Validation happens before any
//! file is created, so a bad specification leaves nothing behind.
//!
//! Rules (and where extentdb chooses):
//! - SIZE defaults to 8 MB (SQL Server 2016+). It is rounded up to whole extents (64 KB).
//! - A primary file must be at least the model database's primary file. extentdb's model is
//!   3 MB (SQL Server 2014's model; 2016+ uses 8 MB, which would reject seed 000's 5 MB primary
//!   file): error 1803. Any other file must be at least 512 KB: error 5174.
//! - MAXSIZE below SIZE: 5103. FILEGROWTH above a MAXSIZE: 5169. Sizes above 2^31-1 pages: 1842.
//! - FILEGROWTH defaults to 64 MB; KB/MB/GB growth is rounded to the nearest 64 KB; 0 (or 0%)
//!   means no autogrowth.

use crate::error::{SqlError, SqlResult};
use crate::filegroup::{Growth, round_to_extents};
use crate::units::{PAGES_PER_EXTENT, PAGES_PER_MB, SizeSpec, kb_to_pages};
use std::path::PathBuf;

/// The model database's primary file size, the minimum for a primary file.
pub const MODEL_PRIMARY_SIZE_MB: u32 = 3;
/// Default SIZE of a file whose specification has none.
pub const DEFAULT_SIZE_PAGES: u32 = 8 * PAGES_PER_MB;
/// Default FILEGROWTH.
pub const DEFAULT_GROWTH_PAGES: u32 = 64 * PAGES_PER_MB;
/// Smallest non-primary file: 512 KB.
pub const MIN_FILE_PAGES: u32 = 64;
/// Largest size in pages (message 1842).
pub const MAX_PAGES: u64 = 2_147_483_647;
/// Longest logical name (an identifier).
pub const MAX_LOGICAL_NAME_CHARS: usize = 128;

/// MAXSIZE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxSize {
    Unlimited,
    Kb(u64),
}

/// One `( NAME = ..., FILENAME = ..., ... )` file specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSpec {
    pub name: String,
    pub filename: PathBuf,
    pub size: Option<SizeSpec>,
    pub max_size: Option<MaxSize>,
    pub growth: Option<SizeSpec>,
}

impl FileSpec {
    pub fn new(name: &str, filename: impl Into<PathBuf>) -> FileSpec {
        FileSpec {
            name: name.to_string(),
            filename: filename.into(),
            size: None,
            max_size: None,
            growth: None,
        }
    }

    pub fn size(mut self, size: SizeSpec) -> FileSpec {
        self.size = Some(size);
        self
    }

    pub fn max_size(mut self, max_size: MaxSize) -> FileSpec {
        self.max_size = Some(max_size);
        self
    }

    pub fn growth(mut self, growth: SizeSpec) -> FileSpec {
        self.growth = Some(growth);
        self
    }
}

/// A user filegroup in CREATE DATABASE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilegroupSpec {
    pub name: String,
    pub is_default: bool,
    pub files: Vec<FileSpec>,
}

/// CREATE DATABASE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseSpec {
    pub name: String,
    /// Files of the PRIMARY filegroup; the first is the primary file.
    pub primary: Vec<FileSpec>,
    pub filegroups: Vec<FilegroupSpec>,
    pub logs: Vec<FileSpec>,
    pub mixed_page_allocation: bool,
}

impl DatabaseSpec {
    /// A database with one primary file and one log file, named as SSMS names them.
    pub fn simple(name: &str, data_size: SizeSpec) -> DatabaseSpec {
        DatabaseSpec {
            name: name.to_string(),
            primary: vec![
                FileSpec::new(&format!("{name}_data"), format!("{name}_data.mdf")).size(data_size),
            ],
            filegroups: Vec::new(),
            logs: vec![FileSpec::new(&format!("{name}_log"), format!("{name}_log.ldf"))],
            mixed_page_allocation: false,
        }
    }
}

/// A validated file specification, in pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedFile {
    pub logical_name: String,
    pub path: PathBuf,
    pub size_pages: u32,
    /// None = unlimited.
    pub max_size_pages: Option<u32>,
    pub growth: Growth,
}

fn pages_checked(kb: u64) -> SqlResult<u64> {
    let pages = kb_to_pages(kb);
    if pages > MAX_PAGES { Err(SqlError::file_size_limit()) } else { Ok(pages) }
}

fn whole_extents_up(pages: u64) -> u32 {
    (pages.div_ceil(u64::from(PAGES_PER_EXTENT)) * u64::from(PAGES_PER_EXTENT)) as u32
}

/// Validates one file specification; `base_dir` resolves relative file names.
pub fn resolve(
    spec: &FileSpec,
    is_primary: bool,
    base_dir: &std::path::Path,
) -> SqlResult<ResolvedFile> {
    if spec.name.is_empty() || spec.name.chars().count() > MAX_LOGICAL_NAME_CHARS {
        return Err(SqlError::new(
            103,
            15,
            4,
            format!(
                "The identifier that starts with '{}' is too long. Maximum length is 128.",
                spec.name.chars().take(128).collect::<String>()
            ),
        ));
    }
    let size_kb = match spec.size {
        None => u64::from(DEFAULT_SIZE_PAGES) * 8,
        Some(SizeSpec::Kb(kb)) => kb,
        Some(SizeSpec::Percent(_)) => return Err(syntax_error("%")),
    };
    if is_primary && size_kb < u64::from(MODEL_PRIMARY_SIZE_MB) * 1024 {
        return Err(SqlError::primary_too_small(MODEL_PRIMARY_SIZE_MB));
    }
    if size_kb < u64::from(MIN_FILE_PAGES) * 8 {
        return Err(SqlError::file_too_small());
    }
    let size_pages = whole_extents_up(pages_checked(size_kb)?);
    let max_size_pages = match spec.max_size {
        None | Some(MaxSize::Unlimited) => None,
        Some(MaxSize::Kb(kb)) => {
            let pages = pages_checked(kb)? as u32;
            Some(pages - pages % PAGES_PER_EXTENT)
        }
    };
    if let Some(max) = max_size_pages
        && max < size_pages
    {
        return Err(SqlError::maxsize_below_size(&spec.name));
    }
    let growth = resolve_growth(spec.growth, &spec.name, max_size_pages)?;
    Ok(ResolvedFile {
        logical_name: spec.name.clone(),
        path: base_dir.join(&spec.filename),
        size_pages,
        max_size_pages,
        growth,
    })
}

/// Validates a FILEGROWTH value against MAXSIZE.
pub fn resolve_growth(
    growth: Option<SizeSpec>,
    name: &str,
    max_size_pages: Option<u32>,
) -> SqlResult<Growth> {
    let growth = match growth {
        None => Growth::Pages(DEFAULT_GROWTH_PAGES),
        Some(SizeSpec::Percent(0)) => Growth::None,
        Some(SizeSpec::Percent(pct)) => Growth::Percent(pct),
        Some(SizeSpec::Kb(kb)) => {
            let pages = pages_checked(kb)? as u32;
            match round_to_extents(pages) {
                0 if kb == 0 => Growth::None,
                0 => Growth::Pages(PAGES_PER_EXTENT),
                rounded => Growth::Pages(rounded),
            }
        }
    };
    if let (Growth::Pages(pages), Some(max)) = (growth, max_size_pages)
        && pages > max
    {
        return Err(SqlError::growth_above_max(name));
    }
    Ok(growth)
}

fn syntax_error(near: &str) -> SqlError {
    SqlError::new(102, 15, 1, format!("Incorrect syntax near '{near}'."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(size: &str) -> FileSpec {
        FileSpec::new("f", "f.ndf").size(SizeSpec::parse(size).unwrap())
    }

    #[test]
    fn sizes_are_checked_with_sql_servers_errors() {
        let dir = Path::new("/data");
        assert_eq!(resolve(&spec("5MB"), false, dir).unwrap().size_pages, 640);
        assert_eq!(resolve(&spec("500KB"), false, dir).unwrap_err().number, 5174);
        assert_eq!(resolve(&spec("2MB"), true, dir).unwrap_err().number, 1803);
        assert_eq!(resolve(&spec("520KB"), false, dir).unwrap().size_pages, 72);
        let capped = spec("5MB").max_size(MaxSize::Kb(4096));
        assert_eq!(resolve(&capped, false, dir).unwrap_err().number, 5103);
        let growth = spec("5MB").max_size(MaxSize::Kb(6144)).growth(SizeSpec::Kb(10 * 1024));
        assert_eq!(resolve(&growth, false, dir).unwrap_err().number, 5169);
        assert_eq!(resolve(&spec("20000GB"), false, dir).unwrap_err().number, 1842);
    }

    #[test]
    fn growth_defaults_and_rounding() {
        let dir = Path::new("/data");
        assert_eq!(resolve(&spec("5MB"), false, dir).unwrap().growth, Growth::Pages(8192));
        let zero = spec("5MB").growth(SizeSpec::Kb(0));
        assert_eq!(resolve(&zero, false, dir).unwrap().growth, Growth::None);
        let small = spec("5MB").growth(SizeSpec::Kb(100));
        assert_eq!(resolve(&small, false, dir).unwrap().growth, Growth::Pages(16));
        let pct = spec("5MB").growth(SizeSpec::Percent(10));
        assert_eq!(resolve(&pct, false, dir).unwrap().growth, Growth::Percent(10));
    }
}
