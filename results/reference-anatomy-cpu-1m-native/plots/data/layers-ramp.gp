nlayers = 10
colours = '#4c72b0 #64b5cd #8da0cb #55a868 #8fd175 #ccb974 #dd8452 #c44e52 #bcbcbc #e0e0e0'
unit = 'microseconds of server CPU per accepted connection'
ttl = 'Server CPU per accepted connection, by layer (ramp)'
