"""stub"""
def add_arguments(parser):
    pass

def run(**_):
    raise NotImplementedError
