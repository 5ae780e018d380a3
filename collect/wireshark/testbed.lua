-- Wireshark dissector for the testbed's wire header (docs/WIRE.md, version 1).
-- Use: wireshark -X lua_script:collect/wireshark/testbed.lua runs/<id>/pcap/<node>.pcap
-- or copy this file into Wireshark's personal plugins folder. It decodes UDP port 7777 and,
-- heuristically, any UDP datagram that starts with the magic "TB".

local testbed = Proto("testbed", "Testbed agent message")

-- The base header, field by field: name, offset, length in bytes. agents/wire.py's HEADER is the
-- machine-readable layout: tests/test_wire_readers.py checks this table, the ProtoFields and the
-- type, flag and extension tables below against it, and has tshark decode with this file messages
-- that wire.py encoded.
local header = {
    {"magic", 0, 2}, {"version", 2, 1}, {"type", 3, 1}, {"flags", 4, 1}, {"hops", 5, 1},
    {"header_len", 6, 2}, {"origin", 8, 4}, {"sequence", 12, 4}, {"sender", 16, 4},
    {"frag_index", 20, 2}, {"frag_count", 22, 2}, {"message_id", 24, 8},
}
local at = {}  -- name -> {name, offset, length}
local BASE_LEN = 0
for _, h in ipairs(header) do
    at[h[1]] = h
    BASE_LEN = math.max(BASE_LEN, h[2] + h[3])
end

local function field(buffer, name)
    return buffer(at[name][2], at[name][3])
end

-- The body of CAUSAL_DATA (and of CAUSAL_RECOVERY replies): a record count, then one record per
-- event, field by field: name, bytes of one item and, for a field that repeats, the earlier field
-- holding the number of items (a repeated 1-byte item is shown as bytes). agents/wire.py's
-- EVENT_COUNT and EVENT_RECORD are the layout; the tests check these two tables against them.
local event_count = {"count", 2}
local event_record = {
    {"index", 2}, {"sequence", 4}, {"origin", 4}, {"created_ns", 8}, {"age", 1}, {"n", 2},
    {"ts", 4, "n"}, {"body_len", 4}, {"body", 1, "body_len"},
}

local types = {
    [1] = "ACK", [2] = "PROBE",
    [10] = "ABC_REQUEST", [11] = "ABC_REPLY", [12] = "ABC_DATA", [13] = "ABC_TAKE",
    [20] = "GOSSIP_KNOWLEDGE", [21] = "GOSSIP_HEADERS", [22] = "GOSSIP_PULL", [23] = "GOSSIP_GROUPS",
    [30] = "CAUSAL_DATA", [31] = "CAUSAL_RECOVERY", [32] = "MEMBERSHIP", [33] = "CAUSAL_EVENT",
    [34] = "CAUSAL_RECOVER",
}
local extension_types = {
    [1] = "VECTOR_CLOCK", [2] = "INFRA_ID", [3] = "TARGET", [4] = "ACKED", [5] = "TIMESTAMP_NS",
}

local f = testbed.fields
f.magic = ProtoField.string("testbed.magic", "Magic")
f.version = ProtoField.uint8("testbed.version", "Version")
f.type = ProtoField.uint8("testbed.type", "Type", base.DEC, types)
f.flags = ProtoField.uint8("testbed.flags", "Flags", base.HEX)
f.flag_ack = ProtoField.bool("testbed.flags.ack_requested", "ACK requested", 8, nil, 0x01)
f.flag_retx = ProtoField.bool("testbed.flags.retransmission", "Retransmission", 8, nil, 0x02)
f.flag_bcast = ProtoField.bool("testbed.flags.broadcast", "Broadcast", 8, nil, 0x04)
f.flag_relayed = ProtoField.bool("testbed.flags.relayed", "Relayed", 8, nil, 0x08)
f.flag_pulled = ProtoField.bool("testbed.flags.pulled", "Pulled", 8, nil, 0x10)
f.hops = ProtoField.uint8("testbed.hops", "Hops")
f.header_len = ProtoField.uint16("testbed.header_len", "Header length")
f.origin = ProtoField.uint32("testbed.origin", "Origin node")
f.sequence = ProtoField.uint32("testbed.sequence", "Sequence")
f.sender = ProtoField.uint32("testbed.sender", "Sender node")
f.frag_index = ProtoField.uint16("testbed.frag_index", "Fragment")
f.frag_count = ProtoField.uint16("testbed.frag_count", "Fragments")
f.message_id = ProtoField.uint64("testbed.message_id", "Message id")
f.ext_type = ProtoField.uint8("testbed.ext.type", "Extension", base.DEC, extension_types)
f.ext_len = ProtoField.uint16("testbed.ext.len", "Length")
f.ext_value = ProtoField.bytes("testbed.ext.value", "Value")
f.payload = ProtoField.bytes("testbed.payload", "Payload")
f.event_count = ProtoField.uint16("testbed.events", "Events")
f.event = ProtoField.none("testbed.event", "Event")
f.event_index = ProtoField.uint16("testbed.event.index", "Index (ticket)")
f.event_sequence = ProtoField.uint32("testbed.event.sequence", "Sequence")
f.event_origin = ProtoField.uint32("testbed.event.origin", "Origin node")
f.event_created_ns = ProtoField.uint64("testbed.event.created_ns", "Created (ns)")
f.event_age = ProtoField.uint8("testbed.event.age", "Age (hops)")
f.event_n = ProtoField.uint16("testbed.event.n", "Vector length")
f.event_ts = ProtoField.uint32("testbed.event.ts", "Timestamp entry")
f.event_body_len = ProtoField.uint32("testbed.event.body_len", "Body length")
f.event_body = ProtoField.bytes("testbed.event.body", "Body")
local flag_bits = {f.flag_ack, f.flag_retx, f.flag_bcast, f.flag_relayed, f.flag_pulled}

local function looks_like_testbed(buffer)
    return buffer:len() >= BASE_LEN and field(buffer, "magic"):string() == "TB"
end

-- One event record from offset, as far as the datagram holds it: its fields under a subtree
-- of `events`. Returns where the record ends, or nil when the datagram ends inside it (the rest
-- is in the message's next fragment).
local function dissect_event(buffer, offset, events, number, count)
    local record = events:add(f.event, buffer(offset))
    record:set_text(string.format("Event %d of %d", number, count))
    local start, values = offset, {}
    for _, r in ipairs(event_record) do
        local name, width, items = r[1], r[2], 1
        if r[3] then
            items = values[r[3]]
        end
        if r[3] and width == 1 then
            local present = math.min(items, buffer:len() - offset)
            if present > 0 then
                record:add(f["event_" .. name], buffer(offset, present))
            end
            offset = offset + present
            if present < items then
                offset = nil
            end
        else
            for _ = 1, items do
                if offset + width > buffer:len() then
                    offset = nil
                    break
                end
                record:add(f["event_" .. name], buffer(offset, width))
                if width <= 4 then
                    values[name] = buffer(offset, width):uint()
                end
                offset = offset + width
            end
        end
        if offset == nil then
            record:set_len(buffer:len() - start)
            record:append_text(" (continues in the next fragment)")
            return nil
        end
    end
    record:set_len(offset - start)
    record:append_text(string.format(": index %d, sequence %d", values.index, values.sequence))
    return offset
end

-- The record count of a CAUSAL_DATA or CAUSAL_RECOVERY body that starts at offset, and under it
-- the records the datagram holds.
local function dissect_events(buffer, offset, tree)
    local width = event_count[2]
    if offset + width > buffer:len() then
        return
    end
    local count = buffer(offset, width):uint()
    local events = tree:add(f.event_count, buffer(offset, width))
    offset = offset + width
    for number = 1, count do
        if offset >= buffer:len() then
            break
        end
        offset = dissect_event(buffer, offset, events, number, count)
        if offset == nil then
            break
        end
    end
end

function testbed.dissector(buffer, pinfo, tree)
    if not looks_like_testbed(buffer) then
        return 0
    end
    pinfo.cols.protocol = "TESTBED"
    local header_len = field(buffer, "header_len"):uint()
    local mtype = field(buffer, "type"):uint()
    local subtree = tree:add(testbed, buffer(0, math.min(header_len, buffer:len())), "Testbed message")
    for _, h in ipairs(header) do
        local item = subtree:add(f[h[1]], buffer(h[2], h[3]))
        if h[1] == "flags" then
            for _, bit in ipairs(flag_bits) do
                item:add(bit, buffer(h[2], h[3]))
            end
        end
    end
    local offset = BASE_LEN
    while offset + 3 <= header_len and offset + 3 <= buffer:len() do
        local length = buffer(offset + 1, 2):uint()
        local ext = subtree:add(f.ext_type, buffer(offset, 1))
        ext:add(f.ext_len, buffer(offset + 1, 2))
        if length > 0 and offset + 3 + length <= buffer:len() then
            ext:add(f.ext_value, buffer(offset + 3, length))
        end
        offset = offset + 3 + length
    end
    if buffer:len() > header_len then
        subtree:add(f.payload, buffer(header_len))
        local name = types[mtype]
        if (name == "CAUSAL_DATA" or name == "CAUSAL_RECOVERY") and field(buffer, "frag_index"):uint() == 0 then
            dissect_events(buffer, header_len, subtree)
        end
    end
    pinfo.cols.info = string.format("%s origin=%d seq=%d frag=%d/%d",
        types[mtype] or tostring(mtype), field(buffer, "origin"):uint(), field(buffer, "sequence"):uint(),
        field(buffer, "frag_index"):uint(), field(buffer, "frag_count"):uint())
    return buffer:len()
end

local function heuristic(buffer, pinfo, tree)
    if not looks_like_testbed(buffer) then
        return false
    end
    testbed.dissector(buffer, pinfo, tree)
    return true
end

DissectorTable.get("udp.port"):add(7777, testbed)
testbed:register_heuristic("udp", heuristic)
