# Loaded once under a candidate's name after the candidate failed to load: Triton 2.51's strict readiness
# stays 400 while a model's last load failed, until a load of that name succeeds (an unload alone does not
# clear it). This model loads anywhere the python backend runs and is unloaded again at once.
class TritonPythonModel:
    def execute(self, requests):
        return []
