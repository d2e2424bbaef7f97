//! sp_configure and RECONFIGURE over the instance's options ([`engine::configuration`]).
//!
//! - `EXEC sp_configure` lists the options (name, minimum, maximum, config_value, run_value),
//!   the advanced ones only while 'show advanced options' is 1 in use.
//! - `EXEC sp_configure 'name'` lists the options whose name contains the text (an exact name
//!   first), as SQL Server's LIKE '%name%' does; none is 15123.
//! - `EXEC sp_configure 'name', value` configures one option (15124 if the text names more
//!   than one, 15129 out of range) and prints 15457, which also goes to the errorlog.
//! - `RECONFIGURE [WITH OVERRIDE]` puts the dynamic options' configured values in use
//!   (5807 for a recovery interval above 60 minutes without OVERRIDE; 574 inside a user
//!   transaction). It checks the affinity masks ([`engine::affinity::check_masks`]: 5832,
//!   5834) and brings the schedulers of a new 'affinity mask' on and off line.
//!
//! Deviations: the message texts are SQL Server's as they are widely quoted; the reference
//! does not list them. A configuration file that cannot be written is 5123 with the
//! operating system's error, as the database registry's is.

use crate::server::{Output, ResultSet};
use crate::session::Session;
use crate::sysviews::{columns, text};
use crate::value;
use engine::SqlError;
use engine::configuration::{
    AFFINITY_IO_MASK, AFFINITY_MASK, ConfigOption, OPTIONS, RECOVERY_INTERVAL_MIN,
    SHOW_ADVANCED_OPTIONS,
};
use engine::record::{SqlType, Value};

/// The longest recovery interval RECONFIGURE takes without WITH OVERRIDE, in minutes.
const MAX_RECOMMENDED_RECOVERY_INTERVAL_MIN: i32 = 60;

fn no_such_option(name: &str) -> SqlError {
    SqlError::new(
        15123,
        16,
        1,
        format!(
            "The configuration option '{name}' does not exist, or it may be an advanced option."
        ),
    )
}

impl Session {
    /// sp_configure [name [, value]].
    pub(crate) fn sp_configure(
        &self,
        args: &[Value],
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let name = match args.first() {
            None | Some(Value::Null) => None,
            Some(v) => Some(value::display(v)),
        };
        let new_value = match args.get(1) {
            None | Some(Value::Null) => None,
            // An int (a value that is not one is 245 or 8115, from the conversion).
            Some(v) => {
                value::as_i64(&value::convert(v, SqlType::Int)?).and_then(|n| i32::try_from(n).ok())
            }
        };
        let options = self.visible_options(name.as_deref());
        let Some(name) = name else {
            out(self.option_rows(&options));
            return Ok(());
        };
        if options.is_empty() {
            return Err(no_such_option(&name));
        }
        let Some(new_value) = new_value else {
            out(self.option_rows(&options));
            return Ok(());
        };
        let [option] = options.as_slice() else {
            return Err(SqlError::new(
                15124,
                16,
                1,
                format!("The configuration option '{name}' is not unique."),
            ));
        };
        self.configure(option, new_value, out)
    }

    /// The options sp_configure shows for `name`: all of them (the advanced ones only while
    /// 'show advanced options' is in use), the one named exactly, or those whose name
    /// contains the text.
    fn visible_options(&self, name: Option<&str>) -> Vec<&'static ConfigOption> {
        let configuration = &self.server.instance.configuration;
        let show_advanced = configuration.value_in_use(SHOW_ADVANCED_OPTIONS) == 1;
        let visible: Vec<&ConfigOption> =
            OPTIONS.iter().filter(|o| show_advanced || !o.is_advanced).collect();
        let Some(name) = name else { return visible };
        let wanted = name.trim().to_lowercase();
        if let Some(exact) = visible.iter().find(|o| o.name.to_lowercase() == wanted) {
            return vec![exact];
        }
        visible.into_iter().filter(|o| o.name.to_lowercase().contains(&wanted)).collect()
    }

    fn option_rows(&self, options: &[&ConfigOption]) -> Output {
        let configuration = &self.server.instance.configuration;
        let rows = options
            .iter()
            .map(|o| {
                vec![
                    text(o.name),
                    Value::Int(o.minimum),
                    Value::Int(o.maximum),
                    Value::Int(configuration.value(o.configuration_id)),
                    Value::Int(configuration.value_in_use(o.configuration_id)),
                ]
            })
            .collect();
        Output::Rows(ResultSet {
            columns: columns(&["name", "minimum", "maximum", "config_value", "run_value"]),
            rows,
            types: vec![
                Some(SqlType::NVarChar(35)),
                Some(SqlType::Int),
                Some(SqlType::Int),
                Some(SqlType::Int),
                Some(SqlType::Int),
            ],
        })
    }

    /// Configures one option, durably, and says so (15457) here and in the errorlog.
    fn configure(
        &self,
        option: &ConfigOption,
        new_value: i32,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        if !(option.minimum..=option.maximum).contains(&new_value) {
            return Err(SqlError::new(
                15129,
                16,
                1,
                format!(
                    "'{new_value}' is not a valid value for configuration option '{}'.",
                    option.name
                ),
            ));
        }
        let configuration = &self.server.instance.configuration;
        let change = configuration.set(option.configuration_id, new_value).map_err(|e| {
            SqlError::new(5123, 16, 1, format!("write the configuration file: {e}"))
        })?;
        let message = format!(
            "Configuration option '{}' changed from {} to {}. Run the RECONFIGURE statement to install.",
            option.name, change.old, change.new
        );
        let process_info = format!("spid{}", self.spid);
        self.server.instance.errorlog.write(&process_info, &message);
        out(Output::Message(message));
        Ok(())
    }

    /// RECONFIGURE [WITH OVERRIDE]: the dynamic options' configured values go into use.
    pub(crate) fn reconfigure(&self, with_override: bool) -> Result<(), SqlError> {
        if self.db().trancount() > 0 {
            return Err(SqlError::new(
                574,
                16,
                0,
                "RECONFIGURE statement not allowed within multi-statement transaction.",
            ));
        }
        let configuration = &self.server.instance.configuration;
        let interval_min = configuration.value(RECOVERY_INTERVAL_MIN);
        if interval_min > MAX_RECOMMENDED_RECOVERY_INTERVAL_MIN && !with_override {
            return Err(SqlError::new(
                5807,
                16,
                1,
                "Recovery intervals above 60 minutes not recommended. Use the RECONFIGURE WITH OVERRIDE statement to force this configuration.",
            ));
        }
        let cpus = engine::affinity::process_cpus();
        let cpu_mask = configuration.value(AFFINITY_MASK);
        let io_mask = configuration.value(AFFINITY_IO_MASK);
        if let Err(error) = engine::affinity::check_masks(cpu_mask, io_mask, cpus, with_override) {
            let process_info = format!("spid{}", self.spid);
            self.server.instance.errorlog.write_error(&process_info, &error);
            return Err(error);
        }
        configuration.reconfigure();
        let instance = &self.server.instance;
        instance.schedulers.set_affinity_mask(configuration.value_in_use(AFFINITY_MASK));
        Ok(())
    }
}
