#!/bin/bash
#
# DevStack plugin of volattach: installs it, writes /etc/volattach/volattach.conf,
# syncs its databases and runs its daemons with run_process (systemd units
# devstack@volattach-*.service).  Settings: devstack/settings.
#
# stack.sh / unstack.sh / clean.sh call this file in these phases:
#   stack install      install_volattach
#   stack post-config  configure_volattach, create_volattach_accounts,
#                      init_volattach (databases + volattach-manage db sync)
#   stack extra        start_volattach
#   unstack            stop_volattach
#   clean              cleanup_volattach

# Save trace setting
_XTRACE_VOLATTACH=$(set +o | grep xtrace)
set -o xtrace

VOLATTACH_DAEMONS="volattach-volume volattach-conductor volattach-compute volattach-api"

function volattach_bin_dir {
    # Where setup_develop put the console scripts (devstack's venv or the
    # system's bin directory).
    get_python_exec_prefix
}

# install_volattach - pip install the checkout (editable, with constraints)
function install_volattach {
    setup_develop "$VOLATTACH_DIR"
    if is_service_enabled mysql; then
        # devstack's MySQL URLs use the PyMySQL driver.
        pip_install_gr PyMySQL
    fi
}

function _volattach_keystone_auth {
    # Service credentials of volattach in section $1 (keystoneauth options).
    local section=$1
    iniset "$VOLATTACH_CONF" "$section" auth_type password
    iniset "$VOLATTACH_CONF" "$section" auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$VOLATTACH_CONF" "$section" username volattach
    iniset "$VOLATTACH_CONF" "$section" password "$SERVICE_PASSWORD"
    iniset "$VOLATTACH_CONF" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$VOLATTACH_CONF" "$section" project_name "$SERVICE_PROJECT_NAME"
    iniset "$VOLATTACH_CONF" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
}

# configure_volattach - write $VOLATTACH_CONF
function configure_volattach {
    sudo install -d -o "$STACK_USER" "$VOLATTACH_CONF_DIR" "$VOLATTACH_STATE_PATH"
    rm -f "$VOLATTACH_CONF"
    if [[ -f "$VOLATTACH_DIR/etc/volattach/volattach.conf.sample" ]]; then
        # Start from the sample: every option documented, all commented out.
        cp "$VOLATTACH_DIR/etc/volattach/volattach.conf.sample" "$VOLATTACH_CONF"
    fi

    iniset "$VOLATTACH_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$VOLATTACH_CONF" DEFAULT state_path "$VOLATTACH_STATE_PATH"
    iniset_rpc_backend volattach "$VOLATTACH_CONF"

    iniset "$VOLATTACH_CONF" database connection "$(database_connection_url "$VOLATTACH_DB_NAME")"

    iniset "$VOLATTACH_CONF" api listen "$VOLATTACH_LISTEN_ADDRESS"
    iniset "$VOLATTACH_CONF" api port "$VOLATTACH_API_PORT"
    iniset "$VOLATTACH_CONF" api workers "$VOLATTACH_API_WORKERS"
    iniset "$VOLATTACH_CONF" api auth_strategy "$VOLATTACH_AUTH_STRATEGY"

    iniset "$VOLATTACH_CONF" cinder endpoint "$VOLATTACH_CINDER_ENDPOINT"
    iniset "$VOLATTACH_CONF" cinder auth_strategy "$VOLATTACH_AUTH_STRATEGY"

    if is_service_enabled volattach-volume; then
        iniset "$VOLATTACH_CONF" volume listen "$VOLATTACH_LISTEN_ADDRESS"
        iniset "$VOLATTACH_CONF" volume port "$VOLATTACH_VOLUME_PORT"
        iniset "$VOLATTACH_CONF" volume connection "$(database_connection_url "$VOLATTACH_VOLUME_DB_NAME")"
        iniset "$VOLATTACH_CONF" volume auth_strategy "$VOLATTACH_AUTH_STRATEGY"
    fi

    if [[ "$VOLATTACH_AUTH_STRATEGY" == "noauth" ]]; then
        # a devstack without Keystone serves noauth on its service address
        iniset "$VOLATTACH_CONF" DEFAULT allow_insecure_noauth True
    fi

    if [[ "$VOLATTACH_AUTH_STRATEGY" == "keystone" ]]; then
        configure_keystone_authtoken_middleware "$VOLATTACH_CONF" volattach
        _volattach_keystone_auth cinder
    fi
}

# create_volattach_accounts - service user and catalog entries
function create_volattach_accounts {
    if [[ "$VOLATTACH_AUTH_STRATEGY" != "keystone" ]]; then
        return
    fi
    create_service_user volattach admin
    # volattach is the compute service of the cloud unless devstack's Nova
    # runs too; then it gets a catalog type of its own.
    local compute_type=compute
    if is_service_enabled n-api; then
        compute_type=volattach-compute
    fi
    local service
    service=$(get_or_create_service volattach "$compute_type" "volattach compute API")
    get_or_create_endpoint "$service" "$REGION_NAME" \
        "$VOLATTACH_SERVICE_PROTOCOL://$VOLATTACH_SERVICE_HOST:$VOLATTACH_API_PORT/v2.1"
    if is_service_enabled volattach-volume; then
        service=$(get_or_create_service volattach-volume block-storage "volattach volume service")
        get_or_create_endpoint "$service" "$REGION_NAME" \
            "$VOLATTACH_SERVICE_PROTOCOL://$VOLATTACH_SERVICE_HOST:$VOLATTACH_VOLUME_PORT/v3/\$(project_id)s"
    fi
}

# init_volattach - (re)create the databases and sync their schemas
function init_volattach {
    recreate_database "$VOLATTACH_DB_NAME"
    if is_service_enabled volattach-volume; then
        recreate_database "$VOLATTACH_VOLUME_DB_NAME"
    fi
    "$(volattach_bin_dir)/volattach-manage" --config-file "$VOLATTACH_CONF" db sync
}

# start_volattach - run the enabled daemons, wait for the HTTP ones
function start_volattach {
    local bindir
    bindir=$(volattach_bin_dir)
    local daemon
    for daemon in $VOLATTACH_DAEMONS; do
        run_process "$daemon" "$bindir/$daemon --config-file $VOLATTACH_CONF"
    done
    if is_service_enabled volattach-volume; then
        if ! wait_for_service "$SERVICE_TIMEOUT" "$VOLATTACH_SERVICE_PROTOCOL://$VOLATTACH_SERVICE_HOST:$VOLATTACH_VOLUME_PORT/"; then
            die $LINENO "volattach-volume did not start"
        fi
    fi
    if is_service_enabled volattach-api; then
        if ! wait_for_service "$SERVICE_TIMEOUT" "$VOLATTACH_SERVICE_PROTOCOL://$VOLATTACH_SERVICE_HOST:$VOLATTACH_API_PORT/"; then
            die $LINENO "volattach-api did not start"
        fi
    fi
}

# stop_volattach - stop every daemon (run_process only started enabled ones)
function stop_volattach {
    local daemon
    for daemon in $VOLATTACH_DAEMONS; do
        stop_process "$daemon"
    done
}

# cleanup_volattach - remove state and configuration
function cleanup_volattach {
    sudo rm -rf "$VOLATTACH_STATE_PATH" "$VOLATTACH_CONF_DIR"
}

if is_service_enabled volattach-api volattach-conductor volattach-compute volattach-volume; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing volattach"
        install_volattach
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring volattach"
        configure_volattach
        create_volattach_accounts
        init_volattach
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting volattach"
        start_volattach
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_volattach
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_volattach
    fi
fi

# Restore xtrace
$_XTRACE_VOLATTACH
