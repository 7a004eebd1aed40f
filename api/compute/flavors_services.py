"""Flavors and services (read-only)."""
from volattach import objects
from volattach.api.compute import base
from volattach import servicegroup


class FlavorsAPI(base.FacadeBase):

    def flavor_list(self, context):
        return objects.Flavor.get_all(context)

    def flavor_get(self, context, flavor_id):
        return objects.Flavor.get_by_flavor_id(context, flavor_id)


class ServicesAPI(base.FacadeBase):

    def service_list(self, context, binary=None, host=None):
        services = objects.ServiceList.get_all(context, binary=binary, host=host)
        return [(s, servicegroup.is_up(s)) for s in services]

    def service_is_up(self, service):
        return servicegroup.is_up(service)
