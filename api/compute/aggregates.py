"""Host aggregates (os-aggregates): create, list, show, update, delete,
add and remove hosts, set metadata.  A host added must be a compute
service; the availability zone rules (one zone per host, no zone change
under servers) hold in the database transaction that writes."""
from volattach.api.compute import base
from volattach import availability_zones
from volattach import exception
from volattach import objects


class AggregatesAPI(base.FacadeBase):

    def host_zones(self):
        """host -> zone of each host in a zoned aggregate (the others are
        in the default zone)."""
        return availability_zones.zoned_hosts()

    def service_zones(self, services):
        """[(service, its zone)]."""
        return availability_zones.service_zones(services)

    def aggregate_create(self, context, name, availability_zone=None):
        aggregate = objects.Aggregate(context, name=name)
        if availability_zone:
            aggregate.metadata = {"availability_zone": availability_zone}
        aggregate.create()
        return aggregate

    def aggregate_list(self, context):
        return objects.AggregateList.get_all(context)

    def aggregate_get(self, context, aggregate_id):
        return objects.Aggregate.get_by_id(context, aggregate_id)

    def aggregate_update(self, context, aggregate_id, values):
        aggregate = self.aggregate_get(context, aggregate_id)
        metadata = ({"availability_zone": values["availability_zone"]}
                    if "availability_zone" in values else None)
        aggregate.update(name=values.get("name"), metadata=metadata)
        return aggregate

    def aggregate_set_metadata(self, context, aggregate_id, metadata):
        aggregate = self.aggregate_get(context, aggregate_id)
        aggregate.update(metadata=metadata, action="update_meta")
        return aggregate

    def aggregate_delete(self, context, aggregate_id):
        self.aggregate_get(context, aggregate_id).destroy()

    def aggregate_add_host(self, context, aggregate_id, host):
        """ComputeHostNotFound (404) unless ``host`` runs a compute."""
        aggregate = self.aggregate_get(context, aggregate_id)
        computes = [s for s in objects.ServiceList.get_all(
            context.elevated(), host=host)
            if s.binary in availability_zones.COMPUTE_BINARIES]
        if not computes:
            raise exception.ComputeHostNotFound(host=host)
        aggregate.add_host(host)
        return aggregate

    def aggregate_remove_host(self, context, aggregate_id, host):
        aggregate = self.aggregate_get(context, aggregate_id)
        try:
            aggregate.delete_host(host)
        except exception.AggregateHostNotFound:
            raise exception.AggregateHostNotFound(
                message="Cannot remove host %s in aggregate %s"
                        % (host, aggregate_id))
        return aggregate
