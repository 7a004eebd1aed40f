"""os-services updates: enable or disable a compute (with a reason), force
it down or up, delete a service.  Only computes may be updated, as in
Nova; a disabled compute is not scheduled to (``conductor/scheduler.py``)
and a forced-down one is down (``volattach.servicegroup``)."""
from volattach.api.compute import base
from volattach import availability_zones
from volattach import exception
from volattach import objects

NOT_COMPUTE = ("Updating a %s service is not supported. Only nova-compute "
               "services can be updated.")


class ServiceUpdatesAPI(base.FacadeBase):

    def service_find(self, context, service_id, by_uuid):
        """The service of id (or uuid) ``service_id``; NotFound."""
        for service in objects.ServiceList.get_all(context):
            if (service.uuid if by_uuid else str(service.id)) == str(
                    service_id):
                return service
        raise exception.ServiceNotFound(
            message="Service %s not found." % service_id)

    def service_find_compute(self, context, host, binary):
        """Before 2.53: the service named by host and binary (404)."""
        if binary not in availability_zones.COMPUTE_BINARIES:
            raise exception.InvalidInput(message=NOT_COMPUTE % binary)
        for service in objects.ServiceList.get_all(context, host=host):
            if service.binary in availability_zones.COMPUTE_BINARIES:
                return service
        raise exception.ServiceNotFound(
            message="Could not find binary %s on host %s." % (binary, host))

    def service_update(self, context, service, changes):
        """Apply ``changes`` (disabled, disabled_reason, forced_down) to a
        compute service (400 for another binary)."""
        if service.binary not in availability_zones.COMPUTE_BINARIES:
            raise exception.InvalidInput(message=NOT_COMPUTE % service.binary)
        for name, value in changes.items():
            setattr(service, name, value)
        service.save()
        return service

    def service_delete(self, context, service):
        """Delete a service; a compute still hosting servers (or with a
        live migration under way) is 409; it leaves its aggregates."""
        if service.binary in availability_zones.COMPUTE_BINARIES:
            from volattach.db import api as db_api
            if db_api.instance_count_by_host([service.host]).get(service.host):
                raise exception.Conflict(
                    message="Unable to delete compute service that is "
                            "hosting instances. Migrate or delete the "
                            "instances first.")
            for aggregate in objects.AggregateList.get_all(context):
                if service.host in aggregate.hosts:
                    aggregate.delete_host(service.host)
        service.destroy()
