//! CREATE DATABASE and the ALTER DATABASE file and filegroup operations.

use super::*;

/// A file to create, with its id and filegroup decided.
struct PlannedFile {
    resolved: ResolvedFile,
    file_id: u16,
    fg_id: u16,
    is_log: bool,
    is_primary: bool,
}

/// Files created so far by one statement; removed again (from disk and from the buffer pool)
/// if the statement fails.
struct CreatedFiles<'a> {
    instance: &'a Instance,
    paths: Vec<PathBuf>,
    registered: Vec<(u16, u16)>,
    committed: bool,
}

impl<'a> CreatedFiles<'a> {
    fn new(instance: &'a Instance) -> CreatedFiles<'a> {
        CreatedFiles { instance, paths: Vec::new(), registered: Vec::new(), committed: false }
    }

    /// Makes the new files' directory entries durable, before the boot page that names them
    /// (the commit point) is written: a crash then cannot leave a boot page naming a file
    /// whose directory entry was lost.
    fn sync_dirs(&self) -> SqlResult<()> {
        let paths = self.paths.iter().map(|p| p.as_path());
        crate::io::sync_parent_dirs(self.instance.io.as_ref(), paths).map_err(|err| {
            let path = self.paths.first().map(|p| p.display().to_string()).unwrap_or_default();
            SqlError::create_file_os_error(&err, &path)
        })
    }
}

impl Drop for CreatedFiles<'_> {
    fn drop(&mut self) {
        if !self.committed {
            for (database_id, file_id) in &self.registered {
                self.instance.buffer_pool.unregister_file(*database_id, *file_id);
            }
            for path in &self.paths {
                let _ = self.instance.io.remove(path);
            }
        }
    }
}

impl Database {
    /// CREATE DATABASE. Relative file names are relative to the instance directory.
    pub fn create(instance: &Arc<Instance>, spec: &DatabaseSpec) -> SqlResult<Database> {
        if !instance.register_database(&spec.name) {
            return Err(SqlError::database_exists(&spec.name));
        }
        let result = Self::create_registered(instance, spec);
        if result.is_err() {
            instance.unregister_database(&spec.name);
        }
        result
    }

    fn create_registered(instance: &Arc<Instance>, spec: &DatabaseSpec) -> SqlResult<Database> {
        let (planned, filegroups) = Self::plan_create(instance, spec)?;
        // master is database 1, as in SQL Server; user databases count from 5 (2-4 are
        // tempdb, model and msdb there, which extentdb does not have).
        let database_id = if spec.name.eq_ignore_ascii_case("master") {
            crate::instance::MASTER_DATABASE_ID
        } else {
            instance.allocate_database_id()
        };
        let mut boot = BootInfo {
            database_id,
            binding_id: new_binding_id(instance),
            created_ms: now_ms(instance),
            mixed_page_allocation: spec.mixed_page_allocation,
            full_recovery: false,
            next_file_id: planned.iter().map(|p| p.file_id).max().unwrap_or(2) + 1,
            next_fg_id: filegroups.iter().map(|fg| fg.id).max().unwrap_or(1) + 1,
            next_au_seq: 1,
            checkpoint_lsn: crate::log::lsn::Lsn::NULL,
            min_lsn: crate::log::lsn::Lsn::NULL,
            name: spec.name.clone(),
            filegroups,
            files: Vec::new(),
            units: Vec::new(),
            last_known_good_ms: 0,
        };
        let primary_dir =
            planned[0].resolved.path.parent().map(Path::to_path_buf).unwrap_or_default();
        for file in &planned {
            boot.files.push(FileEntry {
                file_id: file.file_id,
                is_log: file.is_log,
                path: relative_path(&primary_dir, &file.resolved.path),
            });
        }
        if !boot.fits() {
            return Err(SqlError::too_many_files(boot.files.len() as u32 - 1));
        }
        let mut created = CreatedFiles::new(instance);
        let mut data_files = BTreeMap::new();
        let mut new_logs = Vec::new();
        for file in &planned {
            if file.is_log {
                new_logs.push(Self::create_log_file(instance, &boot, file, &mut created)?);
            } else {
                data_files.insert(
                    file.file_id,
                    Arc::new(Self::create_data_file(instance, &boot, file, &mut created)?),
                );
            }
        }
        let log =
            LogManager::create(instance, boot.database_id, &boot.name, boot.binding_id, new_logs)?;
        let primary = &data_files[&1];
        created.sync_dirs()?;
        Self::write_boot(primary, &boot)?;
        created.committed = true;
        let db =
            Self::assemble(instance, boot, primary_dir, data_files, Arc::new(log), BTreeMap::new());
        db.pool.register_log(db.database_id, db.log.clone());
        db.checkpoint()?;
        Ok(db)
    }

    /// Validates CREATE DATABASE and decides file ids and filegroups (nothing is created yet).
    fn plan_create(
        instance: &Instance,
        spec: &DatabaseSpec,
    ) -> SqlResult<(Vec<PlannedFile>, Vec<FilegroupEntry>)> {
        assert!(!spec.primary.is_empty(), "a database spec names its primary file");
        let mut filegroups = vec![FilegroupEntry {
            id: PRIMARY_FILEGROUP_ID,
            name: "PRIMARY".into(),
            is_default: !spec.filegroups.iter().any(|fg| fg.is_default),
            autogrow_all_files: false,
            read_only: false,
        }];
        let mut data: Vec<(ResolvedFile, u16, bool)> = Vec::new();
        for (index, file) in spec.primary.iter().enumerate() {
            data.push((
                resolve(file, index == 0, instance.dir())?,
                PRIMARY_FILEGROUP_ID,
                index == 0,
            ));
        }
        for (index, fg) in spec.filegroups.iter().enumerate() {
            let id = PRIMARY_FILEGROUP_ID + 1 + index as u16;
            if filegroups.iter().any(|existing| existing.name.eq_ignore_ascii_case(&fg.name)) {
                return Err(SqlError::filegroup_exists(&fg.name));
            }
            filegroups.push(FilegroupEntry {
                id,
                name: fg.name.clone(),
                is_default: fg.is_default,
                autogrow_all_files: false,
                read_only: false,
            });
            for file in &fg.files {
                data.push((resolve(file, false, instance.dir())?, id, false));
            }
        }
        let mut logs = Vec::new();
        for file in &spec.logs {
            logs.push(resolve(file, false, instance.dir())?);
        }
        if logs.is_empty() {
            logs.push(Self::default_log(spec, &data, instance)?);
        }
        let mut planned = Vec::new();
        let mut next_id = 3;
        for (index, (resolved, fg_id, is_primary)) in data.into_iter().enumerate() {
            let file_id = if index == 0 { 1 } else { next_id };
            next_id += u16::from(index != 0);
            planned.push(PlannedFile { resolved, file_id, fg_id, is_log: false, is_primary });
        }
        for (index, resolved) in logs.into_iter().enumerate() {
            let file_id = if index == 0 { 2 } else { next_id };
            next_id += u16::from(index != 0);
            planned.push(PlannedFile {
                resolved,
                file_id,
                fg_id: 0,
                is_log: true,
                is_primary: false,
            });
        }
        let resolved: Vec<&ResolvedFile> = planned.iter().map(|p| &p.resolved).collect();
        check_unique(instance, &resolved, &[], &[])?;
        Ok((planned, filegroups))
    }

    /// LOG ON omitted: one log file of 25 % of the data files, at least 512 KB.
    fn default_log(
        spec: &DatabaseSpec,
        data: &[(ResolvedFile, u16, bool)],
        instance: &Instance,
    ) -> SqlResult<ResolvedFile> {
        let data_pages: u64 = data.iter().map(|(file, _, _)| u64::from(file.size_pages)).sum();
        let log_kb = (data_pages * 8 / 4).max(512);
        let log = FileSpec::new(&format!("{}_log", spec.name), format!("{}_log.ldf", spec.name))
            .size(SizeSpec::Kb(log_kb));
        resolve(&log, false, instance.dir())
    }

    fn create_data_file(
        instance: &Instance,
        boot: &BootInfo,
        file: &PlannedFile,
        created: &mut CreatedFiles<'_>,
    ) -> SqlResult<DataFile> {
        let path = &file.resolved.path;
        let handle = instance.io.create_new(path).map_err(|err| Self::io_err_create(&err, path))?;
        created.paths.push(path.clone());
        let size_pages = file.resolved.size_pages;
        Self::extend_data_file(instance, handle.as_ref(), path, 0, size_pages)
            .map_err(|err| SqlError::create_file_os_error(&err, &path.display().to_string()))?;
        let handle = Arc::new(BufferFile { handle, path: path.display().to_string() });
        let pool = &instance.buffer_pool;
        pool.register_file(boot.database_id, file.file_id, handle.clone());
        created.registered.push((boot.database_id, file.file_id));
        let state =
            FileAlloc::new_file(pool, file.file_id, boot.database_id, file.is_primary, size_pages)?;
        pool.flush(boot.database_id, Some(file.file_id))?;
        let data_file = DataFile {
            file_id: file.file_id,
            logical_name: file.resolved.logical_name.clone(),
            path: path.clone(),
            fg_id: file.fg_id,
            is_primary: file.is_primary,
            settings: Mutex::new(FileSettings {
                growth: file.resolved.growth,
                max_size_pages: file.resolved.max_size_pages,
            }),
            created_ms: boot.created_ms,
            alloc: state,
            handle,
        };
        Self::write_file_header(&data_file, boot.database_id, boot.binding_id, size_pages)?;
        Ok(data_file)
    }

    fn create_log_file(
        instance: &Instance,
        boot: &BootInfo,
        file: &PlannedFile,
        created: &mut CreatedFiles<'_>,
    ) -> SqlResult<NewLogFile> {
        let path = &file.resolved.path;
        let handle = instance.io.create_new(path).map_err(|err| Self::io_err_create(&err, path))?;
        created.paths.push(path.clone());
        let size_pages = file.resolved.size_pages.max(MIN_LOG_FILE_PAGES);
        // Log files are always zeroed when created (reference §4), with or without IFI; the
        // log manager then writes their header page and VLF headers.
        Self::zero_fill(instance, handle.as_ref(), path, 0, size_pages)
            .map_err(|err| SqlError::create_file_os_error(&err, &path.display().to_string()))?;
        Ok(NewLogFile {
            file_id: file.file_id,
            logical_name: file.resolved.logical_name.clone(),
            path: path.clone(),
            size_pages,
            growth: file.resolved.growth,
            max_size_pages: file.resolved.max_size_pages,
            created_ms: boot.created_ms,
            handle,
        })
    }

    /// Writes a data file's header page with `size_pages` and syncs (the growth commit point).
    pub(super) fn write_file_header(
        file: &DataFile,
        database_id: u16,
        binding_id: u64,
        size_pages: u32,
    ) -> SqlResult<()> {
        let settings = *file.settings.lock();
        let header =
            header_for(HeaderOf::Data(file), size_pages, settings, database_id, binding_id);
        write_header_page(file.io(), &header, &file.path)
    }

    pub(super) fn write_boot(primary: &DataFile, boot: &BootInfo) -> SqlResult<()> {
        let path = primary.path_text();
        file::write_page(primary.io(), &mut boot.encode(), alloc::BOOT_PAGE, &path)?;
        primary.io().sync_data().map_err(|err| SqlError::os_io_error(&err, true, 0, &path))
    }

    /// Builds the in-memory database from its parts and recalculates every filegroup.
    pub(super) fn assemble(
        instance: &Arc<Instance>,
        boot: BootInfo,
        primary_dir: PathBuf,
        data_files: BTreeMap<u16, Arc<DataFile>>,
        log: Arc<LogManager>,
        units: BTreeMap<u64, Mutex<AllocUnit>>,
    ) -> Database {
        let mut filegroups = BTreeMap::new();
        for entry in &boot.filegroups {
            filegroups.insert(
                entry.id,
                Filegroup {
                    id: entry.id,
                    name: entry.name.clone(),
                    is_default: entry.is_default,
                    autogrow_all_files: entry.autogrow_all_files,
                    read_only: entry.read_only,
                    members: visit_order(&data_files, entry.id),
                    fill: FillControl::new(instance.config.startup_e, instance.spinlocks.clone()),
                },
            );
        }
        instance.note_database_id(boot.database_id);
        let boot_first_iams: Vec<(u64, PageId)> =
            boot.units.iter().map(|u| (u.au_id, u.first_iam)).collect();
        let db = Database {
            name: boot.name.clone(),
            database_id: boot.database_id,
            binding_id: boot.binding_id,
            instance: instance.clone(),
            pool: instance.buffer_pool.clone(),
            primary_dir,
            inner: RwLock::new(DbInner { boot, data_files, filegroups, units }),
            log,
            first_iams: Mutex::new(
                boot_first_iams.into_iter().filter(|(_, page)| !page.is_null()).collect(),
            ),
            delayed_durability: std::sync::atomic::AtomicBool::new(false),
            checkpoint_log_bytes: std::sync::atomic::AtomicU64::new(0),
            checkpoint_running: Mutex::new(()),
            auto_checkpoints: std::sync::atomic::AtomicU64::new(0),
            checkpoint_task: Arc::default(),
            ghost_task: Arc::default(),
            growth_lock: Mutex::new(()),
            growth_events: Mutex::new(Vec::new()),
            ghost_pages: Mutex::new(BTreeSet::new()),
            ghost_stats: Mutex::new(ghosts::GhostCleanupStats::default()),
            units_outside_transactions: RwLock::new(BTreeSet::new()),
            units_outside_transactions_count: std::sync::atomic::AtomicUsize::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
            catalog: Mutex::new(None),
            index_usage: crate::index_usage::IndexUsage::default(),
        };
        let inner = crate::fiber::read(&db.inner);
        for fg_id in inner.filegroups.keys() {
            if !inner.filegroups[fg_id].members.is_empty() {
                db.recalculate(&inner, *fg_id);
            }
        }
        drop(inner);
        db
    }

    /// Persists the boot page after a change to `boot` (files, filegroups, units, options).
    pub(super) fn save_boot(&self, inner: &mut DbInner, mut boot: BootInfo) -> SqlResult<()> {
        self.fill_first_iams(&mut boot);
        // Allocation pages first: the boot page must never point at an IAM page not yet on disk.
        self.flush_allocation_pages(inner)?;
        if !boot.fits() {
            return Err(SqlError::too_many_files(inner.boot.files.len() as u32));
        }
        Self::write_boot(&inner.data_files[&1], &boot)?;
        inner.boot = boot;
        Ok(())
    }

    /// ALTER DATABASE ADD FILE ... [TO FILEGROUP fg].
    pub fn add_files(&self, files: &[FileSpec], to_filegroup: Option<&str>) -> SqlResult<()> {
        self.add_files_of_kind(files, to_filegroup, false)
    }

    /// ALTER DATABASE ADD LOG FILE.
    pub fn add_log_files(&self, files: &[FileSpec]) -> SqlResult<()> {
        self.add_files_of_kind(files, None, true)
    }

    fn add_files_of_kind(
        &self,
        specs: &[FileSpec],
        to_filegroup: Option<&str>,
        is_log: bool,
    ) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let fg_id = match (is_log, to_filegroup) {
            (true, _) => 0,
            (false, Some(name)) => self.filegroup_by_name(&inner, name)?.id,
            (false, None) => PRIMARY_FILEGROUP_ID,
        };
        let mut resolved = Vec::new();
        for spec in specs {
            resolved.push(resolve(spec, false, self.instance.dir())?);
        }
        let log_files = self.log.files();
        let existing_names: Vec<String> = inner
            .data_files
            .values()
            .map(|f| f.logical_name.clone())
            .chain(log_files.iter().map(|l| l.1.clone()))
            .collect();
        let existing_paths: Vec<PathBuf> = inner
            .data_files
            .values()
            .map(|f| f.path.clone())
            .chain(log_files.iter().filter_map(|l| self.log.path_of(l.0)))
            .collect();
        check_unique(
            &self.instance,
            &resolved.iter().collect::<Vec<_>>(),
            &existing_names,
            &existing_paths,
        )?;
        let mut boot = inner.boot.clone();
        let mut planned = Vec::new();
        for file in resolved {
            let file_id = boot.next_file_id;
            boot.next_file_id += 1;
            boot.files.push(FileEntry {
                file_id,
                is_log,
                path: relative_path(&self.primary_dir, &file.path),
            });
            planned.push(PlannedFile { resolved: file, file_id, fg_id, is_log, is_primary: false });
        }
        if !boot.fits() {
            return Err(SqlError::too_many_files(inner.boot.files.len() as u32));
        }
        let mut created = CreatedFiles::new(&self.instance);
        let mut new_data = Vec::new();
        let mut new_logs = Vec::new();
        for file in &planned {
            if is_log {
                let new = Self::create_log_file(&self.instance, &boot, file, &mut created)?;
                new_logs.push(self.log.format_new_file(new)?);
            } else {
                new_data.push(Arc::new(Self::create_data_file(
                    &self.instance,
                    &boot,
                    file,
                    &mut created,
                )?));
            }
        }
        created.sync_dirs()?;
        self.save_boot(&mut inner, boot)?;
        created.committed = true;
        for log in new_logs {
            self.log.insert_file(log);
        }
        if !is_log {
            for file in new_data {
                inner.data_files.insert(file.file_id, file);
            }
            self.refresh_members(&mut inner, fg_id);
            self.recalculate(&inner, fg_id);
        }
        Ok(())
    }

    fn refresh_members(&self, inner: &mut DbInner, fg_id: u16) {
        let members = visit_order(&inner.data_files, fg_id);
        inner.filegroups.get_mut(&fg_id).expect("filegroup exists").members = members;
    }

    /// ALTER DATABASE REMOVE FILE: the file must hold no data (5042); the primary data file and
    /// the primary log file cannot be removed (5020).
    pub fn remove_file(&self, logical_name: &str) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let data_id = inner
            .data_files
            .values()
            .find(|f| f.logical_name.eq_ignore_ascii_case(logical_name))
            .map(|f| f.file_id);
        let log_id = self.log.file_id_by_name(logical_name);
        let file_id = data_id.or(log_id).ok_or_else(SqlError::files_not_found)?;
        if file_id == 1 || file_id == 2 {
            return Err(SqlError::primary_file_removal());
        }
        let mut removed_log = None;
        let path = if let Some(id) = data_id {
            let file = inner.data_files[&id].clone();
            if !file.alloc.is_empty_of_data(&self.pool)? {
                return Err(SqlError::file_not_empty(&file.logical_name));
            }
            let fg = &inner.filegroups[&file.fg_id];
            if fg.is_default && fg.members.len() == 1 {
                return Err(SqlError::only_file_in_default_filegroup(&file.logical_name));
            }
            file.path.clone()
        } else {
            let log = self.log.remove_file(file_id)?;
            let path = log.path.clone();
            removed_log = Some(log);
            path
        };
        let mut boot = inner.boot.clone();
        boot.files.retain(|entry| entry.file_id != file_id);
        if let Err(error) = self.save_boot(&mut inner, boot) {
            if let Some(log) = removed_log {
                self.log.insert_file(log);
            }
            return Err(error);
        }
        if let Some(file) = inner.data_files.remove(&file_id) {
            self.refresh_members(&mut inner, file.fg_id);
            if !inner.filegroups[&file.fg_id].members.is_empty() {
                self.recalculate(&inner, file.fg_id);
            }
        }
        self.pool.unregister_file(self.database_id, file_id);
        // The file is no longer part of the database; deleting it is best effort, as in SQL Server.
        let _ = self.instance.io.remove(&path);
        Ok(())
    }

    /// ALTER DATABASE ADD FILEGROUP.
    pub fn add_filegroup(&self, name: &str) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        if name.eq_ignore_ascii_case("DEFAULT") {
            return Err(SqlError::new(
                5051,
                16,
                1,
                "Cannot have a filegroup with the name 'DEFAULT'.",
            ));
        }
        if inner.filegroups.values().any(|fg| fg.name.eq_ignore_ascii_case(name)) {
            return Err(SqlError::filegroup_exists(name));
        }
        let mut boot = inner.boot.clone();
        let id = boot.next_fg_id;
        boot.next_fg_id += 1;
        boot.filegroups.push(FilegroupEntry {
            id,
            name: name.to_string(),
            is_default: false,
            autogrow_all_files: false,
            read_only: false,
        });
        self.save_boot(&mut inner, boot)?;
        let fill =
            FillControl::new(self.instance.config.startup_e, self.instance.spinlocks.clone());
        let fg = Filegroup {
            id,
            name: name.to_string(),
            is_default: false,
            autogrow_all_files: false,
            read_only: false,
            members: Vec::new(),
            fill,
        };
        inner.filegroups.insert(id, fg);
        Ok(())
    }

    /// ALTER DATABASE REMOVE FILEGROUP: only an empty, non-default, non-PRIMARY filegroup.
    pub fn remove_filegroup(&self, name: &str) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let fg = self.filegroup_by_name(&inner, name)?;
        let (id, has_files) = (fg.id, !fg.members.is_empty());
        if has_files || id == PRIMARY_FILEGROUP_ID || fg.is_default {
            return Err(SqlError::filegroup_not_empty(&fg.name));
        }
        let mut boot = inner.boot.clone();
        boot.filegroups.retain(|entry| entry.id != id);
        self.save_boot(&mut inner, boot)?;
        inner.filegroups.remove(&id);
        Ok(())
    }

    /// ALTER DATABASE MODIFY FILEGROUP fg DEFAULT. A filegroup needs a file first (5050).
    pub fn set_default_filegroup(&self, name: &str) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let id = self.filegroup_by_name(&inner, name)?.id;
        if inner.filegroups[&id].members.is_empty() {
            return Err(SqlError::new(
                5050,
                16,
                1,
                format!(
                    "Cannot change the properties of empty filegroup '{name}'. The filegroup must contain at least one file."
                ),
            ));
        }
        let mut boot = inner.boot.clone();
        for entry in &mut boot.filegroups {
            entry.is_default = entry.id == id;
        }
        self.save_boot(&mut inner, boot)?;
        for fg in inner.filegroups.values_mut() {
            fg.is_default = fg.id == id;
        }
        Ok(())
    }

    /// ALTER DATABASE MODIFY FILEGROUP fg { AUTOGROW_SINGLE_FILE | AUTOGROW_ALL_FILES }.
    pub fn set_autogrow_all_files(&self, name: &str, all_files: bool) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let id = self.filegroup_by_name(&inner, name)?.id;
        let mut boot = inner.boot.clone();
        for entry in &mut boot.filegroups {
            if entry.id == id {
                entry.autogrow_all_files = all_files;
            }
        }
        self.save_boot(&mut inner, boot)?;
        inner.filegroups.get_mut(&id).expect("found above").autogrow_all_files = all_files;
        Ok(())
    }

    /// ALTER DATABASE SET MIXED_PAGE_ALLOCATION { ON | OFF }.
    /// ALTER DATABASE SET RECOVERY FULL | SIMPLE. In FULL the log is truncated only by a log
    /// backup, which extentdb does not have yet: the log grows and log_reuse_wait_desc says
    /// LOG_BACKUP.
    pub fn set_recovery_full(&self, full: bool) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let mut boot = inner.boot.clone();
        boot.full_recovery = full;
        self.save_boot(&mut inner, boot)
    }

    /// recovery_model_desc: FULL or SIMPLE.
    pub fn recovery_model_desc(&self) -> &'static str {
        if crate::fiber::read(&self.inner).boot.full_recovery { "FULL" } else { "SIMPLE" }
    }

    pub fn set_mixed_page_allocation(&self, on: bool) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let mut boot = inner.boot.clone();
        boot.mixed_page_allocation = on;
        self.save_boot(&mut inner, boot)
    }
}

/// Checks logical names (1828) and physical names (5170) against each other, against the
/// database's existing files, and against files already on disk; and that no physical name
/// holds a control character (5123).
fn check_unique(
    instance: &Instance,
    files: &[&ResolvedFile],
    existing_names: &[String],
    existing_paths: &[PathBuf],
) -> SqlResult<()> {
    let mut names: Vec<String> = existing_names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let mut paths: Vec<PathBuf> = existing_paths.to_vec();
    for file in files {
        let name = file.logical_name.to_ascii_lowercase();
        if names.contains(&name) {
            return Err(SqlError::logical_name_in_use(&file.logical_name));
        }
        names.push(name);
        check_path_characters(&file.path)?;
        if paths.contains(&file.path) || instance.io.exists(&file.path) {
            return Err(SqlError::file_exists(&file.path.display().to_string()));
        }
        paths.push(file.path.clone());
    }
    Ok(())
}

/// A physical name with a control character (a tab or a line break, say) is refused as Windows
/// refuses it, with SQL Server's 5123 and OS error 123: SQL Server's file names cannot hold
/// one, and the instance's registry of databases keeps a name per line, tab-separated (such a
/// database was SUSPECT at the next start). Linux would accept the name (docs/deviations.md).
fn check_path_characters(path: &Path) -> SqlResult<()> {
    let text = path.display().to_string();
    if text.chars().any(char::is_control) {
        return Err(SqlError::invalid_file_name(&text));
    }
    Ok(())
}

/// `path` relative to `dir` when it lies inside it, else the full path.
fn relative_path(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

/// The file whose header is being written.
pub(super) enum HeaderOf<'a> {
    Data(&'a DataFile),
}

/// The header page content of a data or log file with the given size and settings.
pub(super) fn header_for(
    of: HeaderOf<'_>,
    size_pages: u32,
    settings: FileSettings,
    database_id: u16,
    binding_id: u64,
) -> FileHeader {
    let (file_id, file_type, is_primary, data_space_id, created_ms, name) = match of {
        HeaderOf::Data(f) => {
            (f.file_id, FileType::Rows, f.is_primary, f.fg_id, f.created_ms, &f.logical_name)
        }
    };
    let (growth, is_percent_growth) = growth_to_header(settings.growth);
    FileHeader {
        file_id,
        file_type,
        is_primary,
        data_space_id,
        size_pages,
        max_size_pages: settings.max_size_pages.map_or(-1, |p| p as i32),
        growth,
        is_percent_growth,
        database_id,
        binding_id,
        created_ms,
        logical_name: name.clone(),
    }
}

/// Writes a file header page and makes it durable.
pub(crate) fn write_header_page(
    handle: &dyn IoFile,
    header: &FileHeader,
    path: &Path,
) -> SqlResult<()> {
    let path = path.display().to_string();
    file::write_page(handle, &mut header.encode(), 0, &path)?;
    handle.sync_data().map_err(|err| SqlError::os_io_error(&err, true, 0, &path))
}
