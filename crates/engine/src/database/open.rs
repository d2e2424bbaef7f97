//! Opening an existing database: everything is read back from the files (file headers, the
//! boot page, allocation pages, IAM chains); nothing comes from a side file.

use super::*;

impl Database {
    /// Opens the database whose primary data file is `primary_path`.
    pub fn open(instance: &Arc<Instance>, primary_path: &Path) -> SqlResult<Database> {
        let path_text = primary_path.display().to_string();
        let handle = instance.io.open(primary_path).map_err(|err| open_error(&err, &path_text))?;
        let header = read_header(handle.as_ref(), 1, &path_text)?;
        if !header.is_primary || header.file_type != FileType::Rows {
            return Err(SqlError::new(
                5171,
                16,
                1,
                format!("{path_text} is not a primary database file."),
            ));
        }
        let boot_buf = file::read_page(
            handle.as_ref(),
            PageId::new(1, alloc::BOOT_PAGE),
            header.database_id,
            &path_text,
        )?;
        let boot = BootInfo::decode(&boot_buf)
            .ok_or_else(|| not_a_database_file(&path_text, "boot page"))?;
        if !instance.register_database(&boot.name) {
            return Err(SqlError::database_exists(&boot.name));
        }
        let starting = format!("Starting up database '{}'.", boot.name);
        instance.errorlog.write(&crate::instance::current_process_info(), &starting);
        let primary_dir = primary_path.parent().map(Path::to_path_buf).unwrap_or_default();
        match Self::open_registered(instance, boot, primary_dir, handle) {
            Ok(db) => {
                if let Some(text) =
                    crate::log::excessive_vlfs_message(&db.name, db.log().vlf_count())
                {
                    instance.errorlog.write(&crate::instance::current_process_info(), &text);
                }
                if let Some(at) = db.last_known_good() {
                    let text = format!(
                        "CHECKDB for database '{}' finished without errors on {} (local time). \
                         This is an informational message only; no user action is required.",
                        db.name,
                        at.format("%Y-%m-%d %H:%M:%S%.3f")
                    );
                    instance.errorlog.write(&crate::instance::current_process_info(), &text);
                }
                Ok(db)
            }
            Err(err) => {
                instance.unregister_database(&err.1);
                Err(err.0)
            }
        }
    }

    fn open_registered(
        instance: &Arc<Instance>,
        boot: BootInfo,
        primary_dir: PathBuf,
        primary_handle: Box<dyn IoFile>,
    ) -> Result<Database, (SqlError, String)> {
        let name = boot.name.clone();
        let fail = |error: SqlError| (error, name.clone());
        let mut data_files = BTreeMap::new();
        let mut log_files = Vec::new();
        let mut data_pending = Vec::new();
        let mut primary_handle = Some(primary_handle);
        let mut registered = Registered {
            instance,
            database_id: boot.database_id,
            file_ids: Vec::new(),
            keep: false,
        };
        for entry in &boot.files {
            let path = primary_dir.join(&entry.path);
            let path_text = path.display().to_string();
            let handle = match (entry.file_id, primary_handle.take()) {
                (1, Some(handle)) => handle,
                (_, taken) => {
                    primary_handle = taken;
                    instance.io.open(&path).map_err(|err| fail(open_error(&err, &path_text)))?
                }
            };
            let header = read_header(handle.as_ref(), entry.file_id, &path_text).map_err(&fail)?;
            if header.binding_id != boot.binding_id || header.file_id != entry.file_id {
                return Err(fail(SqlError::file_mismatch()));
            }
            check_not_truncated(handle.as_ref(), &header, &path_text).map_err(&fail)?;
            let settings = FileSettings {
                growth: growth_from_header(header.growth, header.is_percent_growth),
                max_size_pages: u32::try_from(header.max_size_pages).ok(),
            };
            if entry.is_log {
                log_files.push(LogManager::file_from_disk(
                    entry.file_id,
                    header.logical_name.clone(),
                    path,
                    header.size_pages,
                    settings.growth,
                    settings.max_size_pages,
                    header.created_ms,
                    handle,
                ));
                continue;
            }
            let handle = Arc::new(BufferFile { handle, path: path_text });
            instance.buffer_pool.register_file(boot.database_id, entry.file_id, handle.clone());
            registered.file_ids.push(entry.file_id);
            data_pending.push((entry.file_id, header, path, settings, handle));
        }
        let scan_from = if boot.min_lsn.is_null() { boot.checkpoint_lsn } else { boot.min_lsn };
        let (log, records) = LogManager::open(
            instance,
            boot.database_id,
            &boot.name,
            boot.binding_id,
            log_files,
            scan_from,
        )
        .map_err(&fail)?;
        // Redo before anything reads the allocation pages: they are as the log says.
        let sizes: BTreeMap<u16, u32> =
            data_pending.iter().map(|(id, header, ..)| (*id, header.size_pages)).collect();
        let mut recovered =
            recovery::redo(instance, &boot, &log, records, &sizes).map_err(&fail)?;
        for (file_id, header, path, settings, handle) in data_pending {
            let state =
                FileAlloc::open(&instance.buffer_pool, &header, boot.database_id).map_err(&fail)?;
            data_files.insert(
                file_id,
                Arc::new(DataFile {
                    file_id,
                    logical_name: header.logical_name.clone(),
                    path,
                    fg_id: header.data_space_id,
                    is_primary: header.is_primary,
                    settings: Mutex::new(settings),
                    created_ms: header.created_ms,
                    alloc: state,
                    handle,
                }),
            );
        }
        let units = units::load_units(&instance.buffer_pool, &boot, &data_files).map_err(&fail)?;
        registered.keep = true;
        let db = Self::assemble(instance, boot, primary_dir, data_files, Arc::new(log), units);
        db.pool.register_log(db.database_id, db.log.clone());
        let rolled_back = recovery::undo(&db, &mut recovered).map_err(|e| (e, db.name.clone()))?;
        let mut freed = db.free_orphaned_allocations().map_err(|e| (e, db.name.clone()))?;
        let after_crash = recovered.groups_redone > 0 || rolled_back > 0;
        freed.1 += db.free_unused_pages(after_crash).map_err(|e| (e, db.name.clone()))?;
        if freed != (0, 0) {
            let text = format!(
                "Recovery freed {} extent(s) and {} page(s) in database '{}' allocated by \
                 allocations the log did not complete.",
                freed.0, freed.1, db.name
            );
            db.instance.errorlog.write(&crate::instance::current_process_info(), &text);
        }
        // The end of recovery is a checkpoint, as in SQL Server.
        db.checkpoint().map_err(|e| (e, db.name.clone()))?;
        recovery::report(&db, &recovered, rolled_back);
        Ok(db)
    }
}

/// Files registered with the buffer pool by an open in progress; unregistered if it fails.
struct Registered<'a> {
    instance: &'a Instance,
    database_id: u16,
    file_ids: Vec<u16>,
    keep: bool,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if !self.keep {
            for file_id in &self.file_ids {
                self.instance.buffer_pool.unregister_file(self.database_id, *file_id);
            }
        }
    }
}

fn read_header(handle: &dyn IoFile, file_id: u16, path: &str) -> SqlResult<FileHeader> {
    let buf = file::read_page(handle, PageId::new(file_id, 0), 0, path)?;
    FileHeader::decode(&buf).ok_or_else(|| not_a_database_file(path, "file header"))
}

/// 5125: the OS file is shorter than the size its header records.
fn check_not_truncated(handle: &dyn IoFile, header: &FileHeader, path: &str) -> SqlResult<()> {
    let actual = handle.size_bytes().map_err(|err| SqlError::os_io_error(&err, false, 0, path))?;
    let expected = u64::from(header.size_pages) * PAGE_SIZE_U64;
    if actual >= expected {
        return Ok(());
    }
    Err(SqlError::new(
        5125,
        24,
        2,
        format!(
            "File '{path}' appears to have been truncated by the operating system. Expected size is {} KB but actual size is {} KB.",
            expected / 1024,
            actual / 1024
        ),
    ))
}

fn not_a_database_file(path: &str, what: &str) -> SqlError {
    SqlError::new(
        5172,
        16,
        1,
        format!(
            "The header for file '{path}' is not a valid database file header. The {what} property is incorrect."
        ),
    )
}

fn open_error(err: &std::io::Error, path: &str) -> SqlError {
    SqlError::new(
        5120,
        16,
        101,
        format!(
            "Unable to open the physical file \"{path}\". Operating system error {}: \"{}\".",
            err.raw_os_error().unwrap_or(0),
            crate::error::os_error_text(err)
        ),
    )
}
